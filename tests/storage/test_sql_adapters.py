"""Behaviour of the SQL adapters beyond the shared contract, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from stm_core.errors import StorageError
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey, MemoryWrite
from stm_plugins.sqlalchemy_storage.postgres_adapter import MAX_JOINED_UPSERTS, PostgresAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url

from .helpers import NOW, adapter_on, turn

BAD_KEY = MemoryKey(scope_kind="bogus", server_id="g1", user_id="",  # type: ignore[arg-type]
                    channel_id="bad", persona_id="")


@pytest.mark.parametrize("size", [2, MAX_JOINED_UPSERTS + 1])
async def test_a_call_with_a_failing_write_commits_none_of_it(db_url: str, size: int) -> None:
    async with adapter_on(db_url) as adapter:
        good = [w for i in range(size // 2 + 1) for w in turn(f"c{i}")][:size - 1]
        bad = CaptureWrite(key=BAD_KEY, messages=(), now_ms=NOW)
        with pytest.raises(StorageError) as failure:
            await adapter.capture([*good, bad])
        assert failure.value.__cause__ is not None
        assert await adapter.count_memories() == 0
        with pytest.raises(StorageError):
            await adapter.write_memory([MemoryWrite(key=good[0].key, now_ms=NOW,
                                                    set_summary=True, summary="s"),
                                        MemoryWrite(key=BAD_KEY, now_ms=NOW)])
        assert await adapter.get_memory(good[0].key) is None


@pytest.mark.parametrize("size", [1, 2, 3, MAX_JOINED_UPSERTS, MAX_JOINED_UPSERTS + 3])
async def test_multi_row_writes_come_back_in_order(db_url: str, size: int) -> None:
    async with adapter_on(db_url) as adapter:
        keys = [MemoryKey.server("g1", f"c{size - i}", None) for i in range(size)]
        captured = await adapter.capture([CaptureWrite(key=k, messages=(), now_ms=NOW + i,
                                                       counter_increment=i)
                                          for i, k in enumerate(keys)])
        assert [(r.key, r.turns_since_refresh, r.updated_at_ms) for r in captured] == [
            (k, i, NOW + i) for i, k in enumerate(keys)]
        written = await adapter.write_memory([MemoryWrite(key=k, now_ms=NOW + 10,
                                                          set_summary=True, summary=f"s{i}")
                                              for i, k in enumerate(keys)])
        assert [(r.key, r.summary, r.rev) for r in written] == [
            (k, f"s{i}", 2) for i, k in enumerate(keys)]


async def test_a_thousand_concurrent_increments_are_exact(db_url: str) -> None:
    async with adapter_on(db_url) as adapter:
        await asyncio.gather(*(adapter.capture(turn("busy", now=NOW + i)) for i in range(1000)))
        server = await adapter.get_memory(MemoryKey.server("g1", "busy", None))
        mine = await adapter.get_memory(MemoryKey.user("u1", "busy", None, "g1"))
        assert server is not None and server.turns_since_refresh == 1000
        assert mine is not None and mine.turns_since_refresh == 1000
        assert server.rev == 1000


async def test_postgres_schemas_keep_databases_apart(pg_url: str) -> None:
    other = pg_url.replace("schema=", "schema=x")
    async with adapter_on(pg_url) as first, adapter_on(other) as second:
        try:
            await first.capture(turn("c1"))
            assert await first.count_memories() == 2
            assert await second.count_memories() == 0
        finally:
            assert isinstance(second, PostgresAdapter) and second._pool is not None
            schema = parse_postgres_url(other).schema
            await second._pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_unreachable_postgres_is_a_storage_error() -> None:
    adapter = PostgresAdapter(parse_postgres_url(
        "postgresql://postgres@127.0.0.1:1/test?schema=nowhere"))
    with pytest.raises(StorageError, match="cannot connect"):
        await adapter.setup()
    await adapter.aclose()


async def test_a_closed_postgres_adapter_refuses_work(pg_url: str) -> None:
    async with adapter_on(pg_url) as adapter:
        pass
    with pytest.raises(StorageError, match="closed"):
        await adapter.capture(turn("c1"))
    with pytest.raises(StorageError, match="closed"):
        await adapter.get_memory(MemoryKey.server("g1", "c1", None))


async def test_postgres_releases_pool_connections_without_a_reset_round_trip(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """stm leaves no session state on pooled connections, so releasing one
    sends nothing (asyncpg's default would send RESET ALL, UNLISTEN * and more
    on every release); an open transaction is still rolled back by asyncpg."""
    import asyncpg

    sent: list[str] = []
    real_execute = asyncpg.Connection.execute

    async def spy(self: asyncpg.Connection, query: str, *args: object,
                  **kwargs: object) -> str:
        sent.append(query)
        return await real_execute(self, query, *args, **kwargs)

    async with adapter_on(pg_url) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        monkeypatch.setattr(asyncpg.Connection, "execute", spy)
        await asyncio.gather(*(adapter.capture(turn(f"c{n}")) for n in range(20)))
        assert not [q for q in sent if "RESET" in q.upper() or "UNLISTEN" in q.upper()]
        pool = await adapter._connect_pool()
        async with pool.acquire() as conn:
            tx = conn.transaction()
            await tx.start()
            await conn.execute("CREATE TEMP TABLE left_open (n int)")
        # The transaction left open was rolled back on release: nothing of it stays.
        for _ in range(pool.get_size()):
            async with pool.acquire() as conn:
                assert not conn.is_in_transaction()
                assert await conn.fetchval("SELECT to_regclass('pg_temp.left_open')") is None
        rows = await adapter.list_memories(MemoryFilter(server_id="g1", scope_kind="server"))
        assert len(rows) == 20
