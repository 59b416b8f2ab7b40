"""Schema version 4: one cold-load index per scope.

A turn changes ``updated_at_ms`` on every row it writes, so each index holding
that column moves the row's entry. The server's and the user's cold-load
indexes each hold only the rows of their scope: a row moves in one of them,
not both. These tests check the upgrade keeps the data, swaps the indexes, and
that the cold loads stm runs really use them (a partial index the planner
cannot prove usable would turn a cold load into a scan of the table).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncpg

from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey
from stm_plugins.sqlalchemy_storage import statements as st
from stm_plugins.sqlalchemy_storage.base import SqlStorageAdapter, _filter_params
from stm_plugins.sqlalchemy_storage.compiled import Compiled
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS, MigrationStep
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url, parse_sqlite_url

from .helpers import NOW, turn
from .test_migrations import adapter_for, fetch

OLD_INDEXES = {"ix_stm_memories_server", "ix_stm_memories_user"}
NEW_INDEXES = {"ix_stm_memories_server_rows", "ix_stm_memories_user_rows"}
PARAMS = {"server_id": "g1", "user_id": "u1", "since": NOW}
#: Channels of the server whose turns are counted in pages.
CHANNELS = 100
#: SQLite's default page size, and what each WAL frame adds to a page.
PAGE_SIZE = 4096
WAL_FRAME_HEADER = 24


async def index_names(url: str) -> set[str]:
    if url.startswith("sqlite"):
        rows = await fetch(url, "SELECT name FROM sqlite_master WHERE type = 'index' "
                                "AND tbl_name = 'stm_memories'")
    else:
        rows = await fetch(url, "SELECT indexname FROM pg_indexes "
                                "WHERE tablename = 'stm_memories' "
                                "AND schemaname = current_schema()")
    return {str(r[0]) for r in rows}


async def test_version_4_swaps_the_cold_load_indexes_and_keeps_the_rows(db_url: str) -> None:
    v3 = adapter_for(db_url, MIGRATIONS[:3])
    await v3.setup()
    written = [*await v3.capture(turn("c1", texts=("before the upgrade",))),
               *await v3.capture(turn("c2", user="u2"))]
    await v3.aclose()
    assert await index_names(db_url) >= OLD_INDEXES

    latest = adapter_for(db_url)
    try:
        status = await latest.setup()
        assert (status.from_version, status.to_version) == (3, 4)
        names = await index_names(db_url)
        assert names >= NEW_INDEXES and not OLD_INDEXES & names
        server_rows = await latest.load_server_memories("g1", updated_since_ms=0)
        assert sorted(r.key.channel_id for r in server_rows) == ["c1", "c2"]
        user_rows = await latest.load_user_memories("u2", updated_since_ms=0)
        assert [r.key.channel_id for r in user_rows] == ["c2"]
        for record in written:
            assert await latest.get_memory(record.key) == record
        # Written after the upgrade: found through the new indexes too.
        await latest.capture(turn("c3", user="u2", now=NOW + 1))
        assert {r.key.channel_id for r in await latest.load_user_memories(
            "u2", updated_since_ms=NOW + 1)} == {"c3"}
    finally:
        await latest.aclose()


async def test_version_3_code_keeps_working_on_version_4(db_url: str) -> None:
    """The step drops two indexes, yet it is an expand step: no statement of
    version 3 names them."""
    latest = adapter_for(db_url)
    await latest.setup()
    await latest.aclose()
    old = adapter_for(db_url, MIGRATIONS[:3])
    try:
        status = await old.setup()
        assert status.from_version == 4
        await old.capture(turn("c1"))
        assert [r.key.channel_id for r in await old.load_server_memories(
            "g1", updated_since_ms=0)] == ["c1"]
    finally:
        await old.aclose()


def _cold_loads(adapter: SqlStorageAdapter) -> dict[str, Compiled]:
    """Both cold loads as the adapter compiled them, by the index each should use."""
    return {"ix_stm_memories_server_rows": adapter.statement("server_rows", st.server_rows),
            "ix_stm_memories_user_rows": adapter.statement("user_rows", st.user_rows)}


async def test_cold_loads_use_the_index_of_their_scope(db_url: str) -> None:
    adapter = adapter_for(db_url)
    await adapter.setup()
    try:
        for channel in range(40):
            await adapter.capture(turn(f"c{channel}", user=f"u{channel % 4}", now=NOW + channel))
        loads = _cold_loads(adapter)
    finally:
        await adapter.aclose()
    for index, load in loads.items():
        params = {k: v for k, v in PARAMS.items() if k in load.names or not load.names}
        assert index in await _plan(db_url, load, params), index


async def test_filters_naming_a_scope_use_its_index_and_find_its_rows(db_url: str) -> None:
    """The admin's filters (forget a user: their rows of user scope) name the
    scope as a literal, so the index of that scope's rows serves them; bound,
    the scope would leave them a scan of half the table."""
    adapter = adapter_for(db_url)
    await adapter.setup()
    forget_user = MemoryFilter(user_id="u1", scope_kind="user")
    server_rows = MemoryFilter(server_id="g1", scope_kind="server")
    try:
        for channel in range(40):
            await adapter.capture(turn(f"c{channel}", user=f"u{channel % 4}", now=NOW + channel))
        assert len(await adapter.list_memories(forget_user)) == 10
        assert len(await adapter.list_memories(server_rows)) == 40
        assert await adapter.list_memories(MemoryFilter(user_id="u1", scope_kind="server")) == []
        deleted = await adapter.delete_memories(forget_user)
        assert {k.user_id for k in deleted} == {"u1"} and len(deleted) == 10
        assert len(await adapter.list_memories(server_rows)) == 40  # the server's rows stay
        fields, params = _filter_params(forget_user)
        assert "scope_kind" not in params
        plans = {name: adapter.statement((name, fields), _unexpected)
                 for name in ("list_rows", "delete_rows")}
    finally:
        await adapter.aclose()
    for name, compiled in plans.items():
        assert "ix_stm_memories_user_rows" in await _plan(db_url, compiled, params), name


async def test_a_scope_other_than_the_two_stays_a_parameter(sqlite_url: str) -> None:
    """Only the two scopes are written into SQL; anything else is bound (and
    matches no row), however it is spelled."""
    hostile = MemoryFilter(user_id="u1", scope_kind="user' OR '1'='1")  # type: ignore[arg-type]
    fields, params = _filter_params(hostile)
    assert "scope_kind" in fields and params["scope_kind"] == hostile.scope_kind
    adapter = adapter_for(sqlite_url)
    await adapter.setup()
    try:
        await adapter.capture(turn("c1"))
        assert await adapter.list_memories(hostile) == []
        assert await adapter.delete_memories(hostile) == []
        assert len(await adapter.list_memories(MemoryFilter(user_id="u1"))) == 1
    finally:
        await adapter.aclose()


def _unexpected() -> Any:
    raise AssertionError("the adapter has not compiled this statement")


async def _plan(url: str, compiled: Compiled, params: dict[str, object]) -> str:
    """The plan of a statement as the adapter compiled it, with ``params``. On
    PostgreSQL with sequential scans off: a test's table is so small a scan is
    cheaper, and the plan should show whether the index can serve it at all."""
    if url.startswith("sqlite"):
        with sqlite3.connect(parse_sqlite_url(url).path or "") as conn:
            return " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {compiled.sql}",
                                                      compiled.named(params)))
    target = parse_postgres_url(url)
    conn = await asyncpg.connect(target.dsn, server_settings={"search_path": target.schema or ""})
    try:
        await conn.execute("SET enable_seqscan = off")
        return " ".join(r[0] for r in await conn.fetch(f"EXPLAIN {compiled.sql}",
                                                        *compiled.positional(params)))
    finally:
        await conn.close()


async def wal_pages_per_turn(path: Path, migrations: Sequence[MigrationStep]) -> float:
    """The pages a guild turn (a server row and the user's copy, each about
    3 KB of lines) appends to the WAL once every row exists, on a server of
    ``CHANNELS`` channels with Discord-sized ids, at schema ``migrations``."""
    lines = tuple(CrudeMessage(role="user", content=f"line {k} " + "x" * 250,
                               speaker_name="Ann", timestamp_ms=NOW) for k in range(10))
    server, user = "900000000000000001", "700000000000000001"
    adapter = adapter_for(f"sqlite:///{path}", migrations)
    await adapter.setup()
    try:
        async def guild_turn(i: int) -> None:
            now, channel = NOW + i * 1000, str(800000000000000000 + i % CHANNELS)
            await adapter.capture([
                CaptureWrite(key=MemoryKey.server(server, channel, None), messages=lines,
                             now_ms=now, counter_increment=1),
                CaptureWrite(key=MemoryKey.user(user, channel, None, server), messages=lines,
                             now_ms=now)])

        for i in range(2 * CHANNELS):  # every row exists, written twice
            await guild_turn(i)
        with sqlite3.connect(path) as conn:
            for _ in range(100):  # the adapter's own checkpoint may be running
                busy, _frames, _copied = conn.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if not busy:
                    break
                await asyncio.sleep(0.01)
        assert busy == 0
        turns = 100  # under the 4 MiB of WAL growth after which the adapter checkpoints
        for i in range(2 * CHANNELS, 2 * CHANNELS + turns):
            await guild_turn(i)
        return os.stat(f"{path}-wal").st_size / (PAGE_SIZE + WAL_FRAME_HEADER) / turns
    finally:
        await adapter.aclose()


async def test_a_guild_turn_writes_5_pages_where_version_3_wrote_7(tmp_path: Path) -> None:
    """What version 4 is for, measured where SQLite counts it. At version 3
    each of a turn's two rows moved in both cold-load indexes; now in one:
    two table pages, the janitor's index and one cold-load index per scope
    (7.2 and 5.0 here with SQLite 3.40)."""
    before = await wal_pages_per_turn(tmp_path / "v3.db", MIGRATIONS[:3])
    after = await wal_pages_per_turn(tmp_path / "v4.db", MIGRATIONS)
    assert after <= 5.5 and after <= before - 1.5, (before, after)
