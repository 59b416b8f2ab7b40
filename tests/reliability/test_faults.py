"""The database failing: unreachable, hung, reset mid-transaction, read-only, full.

In each case a turn keeps working from the cache where it can
(``build_context`` of a warm turn), falls back where it cannot (a cold turn:
the empty fallback and a logged error), writes raise a clear
``StorageError``, the cache never holds what the database does not, and the
store recovers by itself once the database is back.

PostgreSQL faults go through a TCP proxy (:mod:`.pgproxy`) so the shared
server keeps running. SQLite's read-only file is ``chattr +i`` on the
database and its WAL (root ignores file modes, not the immutable flag); a
full database is ``PRAGMA max_page_count`` on the writer's connection, which
fails writes with ``SQLITE_FULL`` exactly as a full disk does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter

from .pgproxy import PgProxy
from .support import add_figure, cache_problems

SERVER = "g"
FAST = Settings(db_timeout_seconds=1.0, listener_check_seconds=0.2)


def warm_turn() -> Turn:
    return Turn(user_id="u1", channel_id="c1", server_id=SERVER, persona_id="p", has_tools=True)


def cold_turn() -> Turn:
    return Turn(user_id="u9", channel_id="x1", server_id="elsewhere", has_tools=True)


async def one_turn(stm: Stm, turn: Turn, text: str) -> None:
    await stm.record_turn(turn, [HistoryMessage(author_type="user", content=text,
                                                speaker_name="u1")],
                          [PersonaResponse(persona_id="p", persona_name="P",
                                           content=f"re: {text}")])


async def seed(stm: Stm) -> StmContext:
    """Memory in two channels, and the warm turn's context (now cached)."""
    other = Turn(user_id="u1", channel_id="c2", server_id=SERVER, persona_id="p")
    await one_turn(stm, other, "in c2")
    assert (await stm.apply_tool_call(other, {"summary": "c2 summary"})).ok
    await one_turn(stm, warm_turn(), "in c1")
    ctx = await stm.build_context(warm_turn())
    assert ctx.memory_items and ctx != StmContext.error_fallback()
    return ctx


async def check_failing(stm: Stm, warm_ctx: StmContext, caplog: pytest.LogCaptureFixture,
                        *, cold_fails: bool = True, why: str = ".") -> int:
    """While the database fails: what still works, what fails, and how (a failed
    write's message matches ``why``). Returns the number of failing calls made."""
    # A warm turn keeps chatting from the cache.
    assert await stm.build_context(warm_turn()) == warm_ctx
    if cold_fails:
        with caplog.at_level(logging.ERROR, logger="stm.pipeline"):
            assert await stm.build_context(cold_turn()) == StmContext.error_fallback()
        assert any(r.name == "stm.pipeline" for r in caplog.records)
    with pytest.raises(StorageError, match=why):
        await one_turn(stm, warm_turn(), "during the outage")
    result = await stm.apply_tool_call(warm_turn(), {"summary": "during the outage"})
    assert not result.ok and result.code == "error"
    with pytest.raises(StorageError):
        await stm.admin.set_server_params(SERVER, refresh_cadence=7)
    return 4


async def check_recovered(stm: Stm, url: str) -> None:
    """Writes work again, nothing failed got in, and the cache is the database."""
    await one_turn(stm, warm_turn(), "after the outage")
    assert (await stm.apply_tool_call(warm_turn(), {"summary": "after"})).ok
    ctx = await stm.build_context(warm_turn())
    assert "during the outage" not in repr(ctx)
    assert await cache_problems(stm) == []
    async with open_store(url, settings=FAST, clock=stm.clock, load_entrypoints=False) as fresh:
        assert await fresh.build_context(warm_turn()) == ctx
        assert (await fresh.admin.server_params(SERVER)).refresh_cadence != 7


@asynccontextmanager
async def through_proxy(pg_url: str) -> AsyncIterator[tuple[PgProxy, str]]:
    proxy, url = await PgProxy.start_for(pg_url)
    try:
        yield proxy, url
    finally:
        await proxy.close()


@pytest.mark.postgres
async def test_postgres_unreachable_then_back(pg_url: str, caplog: pytest.LogCaptureFixture,
                                              figures: dict[str, Any]) -> None:
    async with through_proxy(pg_url) as (proxy, url), \
            open_store(url, settings=FAST, clock=ManualClock(), load_entrypoints=False) as stm:
        warm = await seed(stm)
        proxy.cut()
        faults = await check_failing(stm, warm, caplog)
        proxy.restore()
        assert stm.listener is not None
        await stm.listener.wait_connected(10)
        await check_recovered(stm, pg_url)
        assert stm.listener.stats.connects >= 2
    add_figure(figures, "faults_injected", faults)


@pytest.mark.postgres
async def test_postgres_hung_then_back(pg_url: str, caplog: pytest.LogCaptureFixture,
                                       figures: dict[str, Any]) -> None:
    async with through_proxy(pg_url) as (proxy, url), \
            open_store(url, settings=FAST, clock=ManualClock(), load_entrypoints=False) as stm:
        warm = await seed(stm)
        proxy.stall()
        # A hung server gives the driver no text to quote: the message names the bound.
        faults = await check_failing(stm, warm, caplog,
                                     why=r"write failed: no answer within 1 s \(db_timeout")
        proxy.restore()
        assert stm.listener is not None
        await asyncio.sleep(0.5)
        await stm.listener.wait_connected(10)
        await check_recovered(stm, pg_url)
    add_figure(figures, "faults_injected", faults)


@pytest.mark.postgres
@pytest.mark.parametrize("cut_after", [0, 5, 40, 120, 400, "reply"])
async def test_postgres_reset_in_the_middle_of_a_write(
        pg_url: str, cut_after: int | str, figures: dict[str, Any]) -> None:
    """The connection dies after ``cut_after`` bytes of a write went out, or
    after the server did the work but before its reply arrived: the write may
    or may not have committed; the caller gets a StorageError, the cache drops
    what it cannot know, and nothing half-written is stored.

    The store does not listen here: a listener's reconnection drops the
    whole cache, which would hide a write path that kept a stale row."""
    alone = attrs.evolve(FAST, cross_process_invalidation=False)
    async with through_proxy(pg_url) as (proxy, url), \
            open_store(url, settings=alone, clock=ManualClock(), load_entrypoints=False) as stm:
        assert stm.listener is None
        await seed(stm)
        writes = [
            lambda: one_turn(stm, warm_turn(), "mid-write turn"),
            lambda: stm.admin.set_categories(SERVER, ["Goals: what they want",
                                                      "Mood: how it feels"]),
            lambda: stm.admin.edit_memory(channel_id="c2", persona_id="p", server_id=SERVER,
                                          user_id="u1", summary="edited mid-write"),
            lambda: stm.admin.clear_channel("c2"),
        ]
        faults = 0
        for write in writes:
            await stm.build_context(warm_turn())
            if cut_after == "reply":
                proxy.reset_on_reply()
            else:
                assert isinstance(cut_after, int)
                proxy.reset_after(cut_after)
            try:
                await write()
            except StorageError:
                faults += 1  # a write shorter than ``cut_after`` bytes goes through
            proxy.restore()
            assert await cache_problems(stm) == []
            await one_turn(stm, warm_turn(), "recovered")
            assert await cache_problems(stm) == []
        # Rows are whole: a guild turn's server row and user copy moved together.
        live = await stm.adapter.get_memory(MemoryKey.server(SERVER, "c1", "p"))
        copy = await stm.adapter.get_memory(MemoryKey.user("u1", "c1", "p", SERVER))
        assert live is not None and copy is not None and live.messages == copy.messages
    assert faults >= 1
    add_figure(figures, "faults_injected", faults)


def _immutable(paths: list[Path], on: bool) -> bool:
    flag = "+i" if on else "-i"
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True)
    return done.returncode == 0


async def test_sqlite_read_only_file_then_writable_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, figures: dict[str, Any]) -> None:
    db = tmp_path / "stm.db"
    url = f"sqlite+aiosqlite:///{db}"
    async with open_store(url, settings=FAST, clock=ManualClock(),
                          load_entrypoints=False) as stm:
        warm = await seed(stm)
        files = [db, Path(f"{db}-wal")]
        if not _immutable(files, True):
            pytest.skip("chattr +i is not available on this filesystem")
        try:
            faults = await check_failing(stm, warm, caplog, cold_fails=False)
            assert await stm.build_context(cold_turn()) is not None
        finally:
            _immutable(files, False)
        await check_recovered(stm, url)
    add_figure(figures, "faults_injected", faults)


async def _set_max_pages(adapter: SqliteAdapter, pages: int | None) -> None:
    def run(conn: sqlite3.Connection, limit: int | None) -> None:
        if limit is None:
            limit = 1 << 30
        conn.execute(f"PRAGMA max_page_count = {limit}")

    await adapter.writer.run(run, pages)


async def test_sqlite_full_then_space_again(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                            figures: dict[str, Any]) -> None:
    db = tmp_path / "stm.db"
    url = f"sqlite+aiosqlite:///{db}"
    async with open_store(url, settings=FAST, clock=ManualClock(),
                          load_entrypoints=False) as stm:
        await seed(stm)
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
        await _set_max_pages(adapter, pages)
        # Big rows need new pages: the disk is full for them.
        big = Turn(user_id="u1", channel_id="c3", server_id=SERVER, persona_id="p")
        faults = 0
        with pytest.raises(StorageError, match="full"):
            await stm.record_turn(big, [HistoryMessage(author_type="user",
                                                       content="x" * 200_000)],
                                  [PersonaResponse(persona_id="p", persona_name="P",
                                                   content="y" * 200_000)])
        faults += 1
        assert await cache_problems(stm) == []
        await _set_max_pages(adapter, None)
        await check_recovered(stm, url)
        assert os.path.getsize(db) > 0
    add_figure(figures, "faults_injected", faults)


@pytest.mark.postgres
async def test_postgres_sessions_ended_by_the_server(pg_url: str,
                                                     figures: dict[str, Any]) -> None:
    """A restarting PostgreSQL ends every session (FATAL 57P01) before it
    closes the sockets. A call that starts on such a pooled connection in
    between fails with a StorageError (never the driver's own error), and the
    connection is replaced: the calls after it work."""
    import asyncpg

    from tests.conftest import asyncpg_dsn, postgres_base_url

    alone = attrs.evolve(FAST, cross_process_invalidation=False)
    base = postgres_base_url()
    assert base is not None
    admin = await asyncpg.connect(asyncpg_dsn(base))
    faults = 0
    try:
        async with open_store(pg_url, settings=alone, clock=ManualClock(),
                              load_entrypoints=False) as stm:
            await seed(stm)
            pool = stm.adapter._pool  # type: ignore[attr-defined]
            for _ in range(5):
                # asyncpg has no public list of a pool's connections.
                pids = [h._con.get_server_pid() for h in pool._holders
                        if h._con is not None and not h._con.is_closed()]
                assert pids
                for pid in pids:
                    assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
                outcomes = []
                for _ in range(len(pids) + 1):
                    try:
                        await stm.adapter.load_server_settings(SERVER)
                        outcomes.append("ok")
                    except StorageError:
                        outcomes.append("failed")
                faults += outcomes.count("failed")
                # Each ended connection fails at most one call.
                assert outcomes[-1] == "ok" and outcomes.count("failed") <= len(pids)
            await one_turn(stm, warm_turn(), "after the sessions ended")
            assert await cache_problems(stm) == []
    finally:
        await admin.close()
    add_figure(figures, "faults_injected", faults)
