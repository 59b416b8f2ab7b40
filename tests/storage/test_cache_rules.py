"""The write-through cache's promises: bounded views, loads that never hide a
write committed meanwhile, and the maximum age of a view."""

from __future__ import annotations

from stm_core.cache import LRU, MemoryCache, MemoryView
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryRecord
from tests.conftest import OpenStm
from tests.pipeline.support import make_turn, server_key, write
from tests.pipeline.test_robustness import counting


def record(key: MemoryKey, rev: int, summary: str) -> MemoryRecord:
    return MemoryRecord(key=key, summary=summary, rev=rev, updated_at_ms=rev)


def test_an_lru_holds_at_most_maxsize_entries_dropping_the_least_recent() -> None:
    lru: LRU[str, int] = LRU(3)
    for i, key in enumerate("abcd"):
        lru.put(key, i)
        if key == "c":
            assert lru.get("a") == 0  # refresh a: b is now the least recent
    assert len(lru) == 3
    assert "b" not in lru
    assert [lru.get(k) for k in "acd"] == [0, 2, 3]
    assert lru.evictions == 1


def test_an_entry_exactly_at_the_maximum_age_is_still_served() -> None:
    now = [1_000]
    lru: LRU[str, int] = LRU(10)
    lru.expire_after(500, lambda: now[0])
    lru.put("k", 1)
    now[0] += 500
    assert lru.get("k") == 1
    now[0] += 1
    assert lru.get("k") is None
    assert "k" not in lru and lru.expired == 1


def test_a_write_committed_while_its_scope_loads_is_kept_by_the_load() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    cache.begin_load("server", "g")
    cache.apply([record(key, 2, "written during the load")])
    loaded = MemoryView()
    loaded.apply(record(key, 1, "what the load read"))
    cache.end_load("server", "g", loaded)
    assert loaded.records[key].summary == "written during the load"


def test_a_delete_committed_while_its_scope_loads_is_kept_by_the_load() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    cache.begin_load("server", "g")
    cache.forget([key])
    loaded = MemoryView()
    loaded.apply(record(key, 1, "read before the delete"))
    cache.end_load("server", "g", loaded)
    assert key not in loaded.records and key in loaded.absent


def test_an_older_revision_never_replaces_a_newer_one() -> None:
    view = MemoryView()
    key = MemoryKey.server("g", "c", None)
    view.apply(record(key, 5, "new"))
    view.apply(record(key, 4, "old"))
    assert view.records[key].summary == "new"
    view.apply(record(key, 5, "same rev, later answer"))
    assert view.records[key].summary == "same rev, later answer"


async def test_servers_beyond_the_cache_bound_reload_from_storage(open_stm: OpenStm) -> None:
    settings = Settings(cache_max_servers=2)
    async with open_stm("memory://", settings=settings) as stm:
        for server in ("A", "B", "C"):
            await write(stm, server_key("1", server=server), summary=f"in {server}")
        proxy = counting(stm)
        for server in ("A", "B", "C"):
            ctx = await stm.build_context(make_turn(server_id=server, channel_id="1"))
            assert f"in {server}" in ctx.memory_items[0].text
        assert len(stm.cache.servers) == 2
        proxy.calls.clear()
        await stm.build_context(make_turn(server_id="C", channel_id="1"))
        assert proxy.calls == []
        await stm.build_context(make_turn(server_id="A", channel_id="1"))
        assert proxy.calls, "server A was evicted and must be read again"
        assert len(stm.cache.servers) == 2 and len(stm.cache.settings) <= 2
