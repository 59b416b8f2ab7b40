"""The PostgreSQL adapter's writes that report their outcome (``ReportedWrites``):
the store mirrors them into its cache without a task of its own, so the
adapter must keep the protocol's word on a real database: the report comes
once, before the caller resumes, and a cancelled caller does not cancel the
write, which still reports when it commits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest

from stm_core.errors import StorageError
from stm_core.settings import Settings
from stm_core.storage.protocol import reports_write_outcomes
from stm_core.storage.records import (
    CaptureWrite,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    RevisionNote,
)
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url
from tests.conftest import OpenStm, asyncpg_dsn, postgres_base_url

from .helpers import NOW, adapter_on, turn

pytestmark = pytest.mark.postgres
SETTINGS = Settings(db_timeout_seconds=10.0, cross_process_invalidation=False)
ROW = MemoryKey.server("g1", "c1", None)
BAD_KEY = MemoryKey(scope_kind="bogus", server_id="g1", user_id="",  # type: ignore[arg-type]
                    channel_id="bad", persona_id="")


@asynccontextmanager
async def postgres(pg_url: str) -> AsyncIterator[tuple[PostgresAdapter, asyncpg.Connection]]:
    """The adapter, and a plain connection of the test's own in the same schema."""
    base = postgres_base_url()
    assert base is not None
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    async with adapter_on(pg_url, factory=lambda: PostgresAdapter(
            parse_postgres_url(pg_url), SETTINGS)) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        admin = await asyncpg.connect(asyncpg_dsn(base), server_settings={"search_path": schema})
        try:
            yield adapter, admin
        finally:
            await admin.close()


async def stored_counter(admin: asyncpg.Connection) -> int | None:
    value = await admin.fetchval(
        "SELECT turns_since_refresh FROM stm_memories WHERE scope_kind = 'server' "
        "AND server_id = $1 AND channel_id = $2", ROW.server_id, ROW.channel_id)
    return None if value is None else int(value)


async def waiting_for_a_lock(admin: asyncpg.Connection, adapter: Any) -> None:
    """Until one of ``adapter``'s pooled connections waits for a lock."""
    pool = adapter._pool
    for _ in range(500):
        # asyncpg has no public list of a pool's connections.
        pids = [h._con.get_server_pid() for h in pool._holders
                if h._con is not None and not h._con.is_closed()]
        if await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE "
                                "wait_event_type = 'Lock' AND pid = ANY($1::int[])", pids):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the write never waited for the row lock")


def test_the_store_uses_the_reported_twins() -> None:
    adapter = PostgresAdapter(parse_postgres_url("postgresql://u@h/db"), SETTINGS)
    assert reports_write_outcomes(adapter)


async def test_the_outcome_is_reported_once_before_the_caller_resumes(pg_url: str) -> None:
    async with postgres(pg_url) as (adapter, _admin):
        reports: list[list[MemoryRecord] | None] = []
        records = await adapter.capture_reported(turn("c1"), reports.append)
        assert reports == [records] and records[0].key == ROW
        write = MemoryWrite(key=ROW, now_ms=NOW, set_summary=True, summary="s")
        written = await adapter.write_memory_reported([write], reports.append)
        assert reports == [records, written] and written[0].summary == "s"
        with pytest.raises(StorageError):
            await adapter.capture_reported([CaptureWrite(key=BAD_KEY, messages=(), now_ms=NOW)],
                                           reports.append)
        assert reports[2:] == [None]
        assert await adapter.capture_reported(turn("c2"), None)  # no report asked for


async def test_the_twins_write_and_return_what_the_plain_methods_do(pg_url: str) -> None:
    async with postgres(pg_url) as (adapter, _admin):
        def writes(guild: str) -> list[CaptureWrite]:
            return turn("c1", guild=guild)

        plain = await adapter.capture(writes("plain"))
        twin = await adapter.capture_reported(writes("twin"), None)
        assert [r.messages for r in plain] == [r.messages for r in twin]
        assert [r.turns_since_refresh for r in plain] == [r.turns_since_refresh for r in twin]
        for guild in ("plain", "twin"):
            edit = [MemoryWrite(key=w.key, now_ms=NOW, set_summary=True, summary=f"s {guild}")
                    for w in writes(guild)]
            noted = [MemoryWrite(key=edit[0].key, now_ms=NOW, set_summary=True,
                                 summary=f"noted {guild}",
                                 revision=RevisionNote(author="admin"))]
            if guild == "plain":
                results = [await adapter.write_memory(edit), await adapter.write_memory(noted)]
            else:
                results = [await adapter.write_memory_reported(edit, None),
                           await adapter.write_memory_reported(noted, None)]
            assert [r.summary for rs in results for r in rs] == [
                f"s {guild}", f"s {guild}", f"noted {guild}"]
            assert [r.key for r in results[0]] == [w.key for w in edit]
            assert len(await adapter.list_revisions(edit[0].key)) == 1


async def test_what_fails_before_the_write_starts_is_not_reported(pg_url: str) -> None:
    reports: list[Any] = []
    async with postgres(pg_url) as (adapter, _admin):
        assert await adapter.capture_reported([], reports.append) == []
        assert await adapter.write_memory_reported([], reports.append) == []
    with pytest.raises(StorageError, match="closed"):
        await adapter.capture_reported(turn("c1"), reports.append)
    with pytest.raises(StorageError, match="closed"):
        await adapter.write_memory_reported(
            [MemoryWrite(key=ROW, now_ms=NOW, set_summary=True, summary="s")], reports.append)
    assert reports == []


async def test_a_cancelled_caller_does_not_cancel_the_write(pg_url: str) -> None:
    async with postgres(pg_url) as (adapter, admin):
        await adapter.capture(turn("c1"))
        reports: list[list[MemoryRecord] | None] = []
        async with admin.transaction():
            await admin.execute("SELECT 1 FROM stm_memories FOR UPDATE")
            caller = asyncio.create_task(adapter.capture_reported(turn("c1"), reports.append))
            await waiting_for_a_lock(admin, adapter)
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            assert reports == []  # the write still waits for the lock
        for _ in range(500):
            if reports:
                break
            await asyncio.sleep(0.01)
        assert reports and reports[0] is not None
        assert reports[0][0].turns_since_refresh == 2 == await stored_counter(admin)
        assert adapter._reported.running == 0


async def test_a_report_that_raises_fails_the_call(pg_url: str) -> None:
    async with postgres(pg_url) as (adapter, admin):
        def refuse(_records: Any) -> None:
            raise RuntimeError("the cache refused")

        with pytest.raises(RuntimeError, match="refused"):
            await adapter.capture_reported(turn("c1"), refuse)
        assert await stored_counter(admin) == 1  # committed all the same


async def test_a_store_caller_cancelled_mid_write_still_gets_the_row_cached(
        pg_url: str, open_stm: OpenStm) -> None:
    settings = Settings(db_timeout_seconds=10.0)
    async with open_stm(pg_url, settings=settings) as stm, postgres(pg_url) as (_a, admin):
        await stm.engine.capture(turn("c1"))
        view = await stm.engine.server_memories("g1")
        async with admin.transaction():
            await admin.execute("SELECT 1 FROM stm_memories FOR UPDATE")
            caller = asyncio.create_task(stm.engine.capture(turn("c1")))
            await waiting_for_a_lock(admin, stm.adapter)
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
        for _ in range(500):
            if view.records[ROW].turns_since_refresh == 2:
                break
            await asyncio.sleep(0.01)
        assert view.records[ROW].turns_since_refresh == 2 == await stored_counter(admin)
