"""The PostgreSQL adapter's kept connection (one pooled connection that stays
checked out between calls): it keeps every promise the pool made.

Each test drives a real PostgreSQL: a second, plain connection holds a row
lock to make a call wait, or ends the kept connection's session on the
server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

from stm_core.errors import StorageError
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_plugins.sqlalchemy_storage import reserved_connection
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url

from .helpers import adapter_on, admin_on, row_locked, started_waiting, turn, waits_for_lock

pytestmark = pytest.mark.postgres
FAST = Settings(db_timeout_seconds=1.0, cross_process_invalidation=False)
ROW = MemoryKey.server("g1", "c1", None)


def pg_adapter(url: str, settings: Settings = FAST, **kwargs: Any) -> PostgresAdapter:
    return PostgresAdapter(parse_postgres_url(url), settings, **kwargs)


def kept(adapter: PostgresAdapter) -> Any:
    assert adapter._reserved is not None
    return adapter._reserved.connection


@asynccontextmanager
async def adapter_and_admin(pg_url: str, settings: Settings = FAST
                            ) -> AsyncIterator[tuple[PostgresAdapter, asyncpg.Connection]]:
    """A set-up adapter on the test's schema and a plain connection of the
    test's own."""
    async with adapter_on(pg_url, factory=lambda: pg_adapter(pg_url, settings)) as adapter, \
            admin_on(pg_url) as admin:
        assert isinstance(adapter, PostgresAdapter)
        yield adapter, admin


async def counter(adapter: PostgresAdapter) -> int:
    record = await adapter.get_memory(ROW)
    assert record is not None
    return record.turns_since_refresh


async def test_calls_one_after_another_share_one_kept_connection(pg_url: str) -> None:
    async with adapter_on(pg_url, factory=lambda: pg_adapter(pg_url)) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        await adapter.capture(turn("c1"))
        first = kept(adapter)
        assert first is not None
        pid = first.get_server_pid()
        for n in range(20):
            await adapter.capture(turn(f"c{n}"))
            await adapter.get_memory(ROW)
        assert kept(adapter) is first and first.get_server_pid() == pid
        # It stays one of the pool's connections: the pool counts it, nothing more opens.
        assert adapter._pool.get_size() == 1
        assert await counter(adapter) == 2


async def test_a_kept_connection_the_server_ended_fails_at_most_one_call(pg_url: str) -> None:
    async with adapter_and_admin(pg_url) as (adapter, admin):
        await adapter.capture(turn("c1"))
        for _ in range(3):
            pid = kept(adapter).get_server_pid()
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            outcomes = []
            for _ in range(3):
                try:
                    await adapter.get_memory(ROW)
                    outcomes.append("ok")
                except StorageError:
                    outcomes.append("failed")
            assert outcomes.count("failed") <= 1 and outcomes[-1] == "ok", outcomes
            # The pool opened a new connection, and that one is kept now.
            assert kept(adapter) is not None and kept(adapter).get_server_pid() != pid
        await adapter.capture(turn("c1"))
        assert await counter(adapter) == 2


async def test_a_statement_that_hangs_on_the_kept_connection_times_out(pg_url: str) -> None:
    async with adapter_and_admin(pg_url) as (adapter, admin):
        await adapter.capture(turn("c1"))
        before = kept(adapter)
        pid = before.get_server_pid()
        async with row_locked(admin):
            with pytest.raises(StorageError, match=r"no answer within 1 s"):
                await adapter.capture(turn("c1"))
            # Cancelled on the server too: it no longer waits for the lock.
            assert not await waits_for_lock(admin, pid)
        # The timed-out connection went back to the pool (which waited out the
        # cancellation); calls work again, and the timed-out write is not stored.
        await adapter.capture(turn("c1"))
        assert await counter(adapter) == 2
        assert kept(adapter) is not None and kept(adapter) is not before


async def test_a_kept_connection_lost_in_the_middle_of_a_write_is_a_storage_error(
        pg_url: str) -> None:
    settings = Settings(db_timeout_seconds=10.0, cross_process_invalidation=False)
    async with adapter_and_admin(pg_url, settings) as (adapter, admin):
        await adapter.capture(turn("c1"))
        pid = kept(adapter).get_server_pid()
        async with row_locked(admin):
            write = asyncio.create_task(adapter.capture(turn("c1")))
            await started_waiting(admin, pid)
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            with pytest.raises(StorageError, match="write failed"):
                await write
        await adapter.capture(turn("c1"))
        assert await counter(adapter) == 2


@pytest.mark.parametrize("pool_max", [1, 2, 10])
async def test_concurrent_callers_all_get_a_connection(pg_url: str, pool_max: int) -> None:
    """Callers that find the kept connection busy use the rest of the pool; a
    pool of one keeps none (it would starve them)."""
    async with adapter_on(pg_url, factory=lambda: pg_adapter(
            pg_url, pool_max=pool_max)) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        await adapter.capture(turn("c1"))
        assert (adapter._reserved is None) == (pool_max == 1)
        await asyncio.gather(*(adapter.capture(turn("c1")) for _ in range(60)),
                             *(adapter.get_memory(ROW) for _ in range(60)))
        assert await counter(adapter) == 61
        assert adapter._pool.get_size() <= pool_max


async def test_a_cancelled_caller_gives_the_kept_connection_back(pg_url: str) -> None:
    settings = Settings(db_timeout_seconds=10.0, cross_process_invalidation=False)
    async with adapter_and_admin(pg_url, settings) as (adapter, admin):
        await adapter.capture(turn("c1"))
        before = kept(adapter)
        async with row_locked(admin):
            write = asyncio.create_task(adapter.capture(turn("c1")))
            await started_waiting(admin, before.get_server_pid())
            write.cancel()
            with pytest.raises(asyncio.CancelledError):
                await write
        assert kept(adapter) is not before
        await adapter.capture(turn("c1"))
        assert await counter(adapter) == 2  # the cancelled plain write was cancelled


async def test_the_pools_rules_reach_the_kept_connection(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every RECYCLE_AFTER calls it goes back to the pool once, so a pool that
    expired its connections replaces it too."""
    monkeypatch.setattr(reserved_connection, "RECYCLE_AFTER", 5)
    async with adapter_on(pg_url, factory=lambda: pg_adapter(pg_url)) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        await adapter.capture(turn("c1"))
        pid = kept(adapter).get_server_pid()
        await adapter._pool.expire_connections()
        for _ in range(6):
            await adapter.get_memory(ROW)
        assert kept(adapter) is not None and kept(adapter).get_server_pid() != pid


async def test_closing_waits_for_the_call_on_the_kept_connection(pg_url: str) -> None:
    settings = Settings(db_timeout_seconds=10.0, cross_process_invalidation=False)
    adapter = pg_adapter(pg_url, settings)
    await adapter.setup()
    async with admin_on(pg_url) as admin:
        await adapter.capture(turn("c1"))
        pid = kept(adapter).get_server_pid()
        async with row_locked(admin):
            write = asyncio.create_task(adapter.capture(turn("c1")))
            await started_waiting(admin, pid)
            closing = asyncio.create_task(adapter.aclose())
            await asyncio.sleep(0.1)
            assert not closing.done()  # the write still has the connection
        await asyncio.wait_for(write, 5)
        await asyncio.wait_for(closing, 5)
        with pytest.raises(StorageError, match="closed"):
            await adapter.get_memory(ROW)
        stored = await admin.fetchval(
            "SELECT turns_since_refresh FROM stm_memories WHERE scope_kind = 'server' "
            "AND server_id = $1 AND channel_id = $2", ROW.server_id, ROW.channel_id)
        assert stored == 2


async def test_a_row_a_writer_holds_is_skipped_by_the_purge_and_kept(pg_url: str) -> None:
    """The janitor finds an old row a turn is writing (the turn holds its lock
    until it commits): the purge does not wait for it, as two janitors waiting
    for each other's rows could deadlock; it deletes the rest and the turn's
    memory stays, with the time the turn gave it."""
    async with adapter_and_admin(pg_url) as (adapter, admin):
        await adapter.capture(turn("c1", now=1_000))  # old: both rows of the turn
        cutoff, fresh = 10_000, 20_000
        async with admin.transaction():
            await admin.execute(
                "UPDATE stm_memories SET updated_at_ms = $1 WHERE scope_kind = 'server' "
                "AND server_id = $2 AND channel_id = $3", fresh, ROW.server_id,
                ROW.channel_id)
            # Done while the turn still holds the row: it never waited for it.
            # Only the user's copy, which nobody touched, is gone.
            assert await asyncio.wait_for(
                adapter.purge_older_than(cutoff, batch_size=10), timeout=5) == 1
        record = await adapter.get_memory(ROW)
        assert record is not None and record.updated_at_ms == fresh
