"""Helpers shared by the storage tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from stm_core.models import CrudeMessage
from stm_core.plugins import create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.storage.protocol import StorageAdapter
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_sqlite_url

NOW = 1_767_225_600_000

#: The root ``open_stm`` fixture: ``async with open_stm(url, **kwargs) as stm``.
OpenStm = Callable[..., AbstractAsyncContextManager[Stm]]


def sqlite_adapter(path: Path | str, settings: Settings | None = None) -> SqliteAdapter:
    """A SQLite adapter on the file ``path`` (not set up)."""
    return SqliteAdapter(parse_sqlite_url(f"sqlite:///{path}"), settings or Settings())


def build_adapter(url: str, settings: Settings | None = None) -> StorageAdapter:
    """An adapter for ``url`` chosen the way the store chooses it (not set up)."""
    hooks = Hooks(create_plugin_manager(load_entrypoints=False))
    return hooks.storage_adapter_for(url).factory(url, settings or Settings())


@asynccontextmanager
async def adapter_on(url: str, settings: Settings | None = None,
                     factory: Callable[[], StorageAdapter] | None = None
                     ) -> AsyncIterator[StorageAdapter]:
    adapter = factory() if factory else build_adapter(url, settings)
    await adapter.setup()
    try:
        yield adapter
    finally:
        await adapter.aclose()


def turn(channel: str, *, guild: str = "g1", user: str = "u1", now: int = NOW,
         texts: Sequence[str] = ("hi",)) -> list[CaptureWrite]:
    """The two captures of one guild turn (server scope + the user's copy)."""
    msgs = tuple(CrudeMessage(role="user", content=t, speaker_name="Ann", timestamp_ms=now)
                 for t in texts)
    return [CaptureWrite(key=MemoryKey.server(guild, channel, None), messages=msgs, now_ms=now,
                         counter_increment=1),
            CaptureWrite(key=MemoryKey.user(user, channel, None, guild), messages=msgs,
                         now_ms=now, counter_increment=1)]


@asynccontextmanager
async def admin_on(pg_url: str) -> AsyncIterator[Any]:
    """A plain asyncpg connection of the test's own, working in the test's
    PostgreSQL schema."""
    import asyncpg

    from tests.conftest import asyncpg_dsn, postgres_base_url

    base = postgres_base_url()
    assert base is not None
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    conn = await asyncpg.connect(asyncpg_dsn(base), server_settings={"search_path": schema})
    try:
        yield conn
    finally:
        await conn.close()


@asynccontextmanager
async def row_locked(admin: Any) -> AsyncIterator[None]:
    """The server row of guild ``g1``, channel ``c1`` locked by ``admin``
    until the block ends: writes to it wait."""
    async with admin.transaction():
        locked = await admin.fetch(
            "SELECT 1 FROM stm_memories WHERE scope_kind = 'server' AND server_id = 'g1' "
            "AND channel_id = 'c1' FOR UPDATE")
        assert locked
        yield


async def waits_for_lock(admin: Any, pid: int) -> bool:
    return bool(await admin.fetchval("SELECT count(*) FROM pg_stat_activity "
                                     "WHERE pid = $1 AND wait_event_type = 'Lock'", pid))


async def started_waiting(admin: Any, pid: int) -> None:
    """Until the session ``pid`` waits for a lock."""
    for _ in range(500):
        if await waits_for_lock(admin, pid):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the call never waited for the row lock")
