"""The write-through cache's promises: bounded views, loads that never hide a
write committed meanwhile, and the maximum age of a view."""

from __future__ import annotations

from stm_core.engine.cache import LRU, MemoryCache, MemoryView, UserView
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryRecord, ServerSettings, UserPrefs
from tests.conftest import OpenStm
from tests.pipeline.support import make_turn, server_key, write
from tests.pipeline.test_robustness import counting


def record(key: MemoryKey, rev: int, summary: str) -> MemoryRecord:
    return MemoryRecord(key=key, summary=summary, rev=rev, updated_at_ms=rev)


def test_an_lru_holds_at_most_maxsize_entries_dropping_the_least_recent() -> None:
    lru: LRU[str, int] = LRU(3)
    for i, key in enumerate("abcd"):
        lru.install(key, i)
        if key == "c":
            assert lru.fresh("a") == 0  # refresh a: b is now the least recent
    assert len(lru) == 3
    assert "b" not in lru
    assert [lru.fresh(k) for k in "acd"] == [0, 2, 3]
    assert lru.evictions == 1


def test_an_entry_exactly_at_the_maximum_age_is_still_served() -> None:
    now = [1_000]
    lru: LRU[str, int] = LRU(10)
    lru.expire_after(500, lambda: now[0])
    lru.install("k", 1)
    now[0] += 500
    assert lru.fresh("k") == 1
    now[0] += 1
    assert lru.fresh("k") is None
    assert "k" not in lru and lru.expired == 1


def test_a_write_committed_while_its_scope_loads_is_kept_by_the_load() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    since = cache.mark()
    cache.begin_load("server", "g")
    cache.apply([record(key, 2, "written during the load")], since)
    loaded = cache.new_view([record(key, 1, "what the load read")])
    epoch = cache.epoch
    cache.end_load("server", "g", loaded)
    assert loaded.records[key].summary == "written during the load"
    assert cache.epoch == epoch  # installed


def test_a_delete_committed_while_its_scope_loads_is_kept_by_the_load() -> None:
    """The load did not read the row: it is noted absent."""
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    since = cache.mark()
    cache.begin_load("server", "g")
    cache.forget_rows([key], since)
    loaded = cache.new_view([])
    epoch = cache.epoch
    cache.end_load("server", "g", loaded)
    assert key not in loaded.records and key in loaded.absent
    assert cache.epoch == epoch


def test_a_load_that_read_a_row_deleted_meanwhile_is_not_installed() -> None:
    """Whether the load read the row before the delete or a newer one after
    it cannot be told: the epoch moves, so the loaded view is not kept."""
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    since = cache.mark()
    cache.begin_load("server", "g")
    cache.forget_rows([key], since)
    loaded = cache.new_view([record(key, 1, "read before or after the delete")])
    epoch = cache.epoch
    cache.end_load("server", "g", loaded)
    assert cache.epoch != epoch


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


def test_every_expired_entry_is_counted() -> None:
    now = [0]
    lru: LRU[str, int] = LRU(10)
    lru.expire_after(100, lambda: now[0])
    lru.install("a", 1)
    lru.install("b", 2)
    now[0] = 101
    assert lru.fresh("a") is None and lru.fresh("b") is None
    assert lru.expired == 2


def test_a_row_updated_at_the_drop_time_may_be_missing_from_a_full_view() -> None:
    """``dropped_through_ms`` is inclusive: a row updated in the same
    millisecond as the dropped one may be gone too, so a probe asks the database."""
    view = MemoryView(max_rows=1)
    view.apply(record(MemoryKey.server("g", "old", None), 10, "dropped"))
    view.apply(record(MemoryKey.server("g", "new", None), 20, "kept"))
    assert view.dropped_through_ms == 10
    assert view.may_lack(10) and view.may_lack(9)
    assert not view.may_lack(11)


def cached_with_rows(cache: MemoryCache, *rows: MemoryRecord) -> None:
    for row in rows:
        key = row.key
        if key.scope_kind == "server":
            if cache.servers.peek(key.server_id) is None:
                cache.servers.install(key.server_id, cache.new_view([]))
        elif cache.users.peek(key.user_id) is None:
            cache.users.install(key.user_id, UserView(UserPrefs(user_id=key.user_id),
                                                   cache.new_view([])))
    cache.apply(rows, cache.mark())


def test_a_purge_forgets_old_rows_of_every_cached_view_and_keeps_the_cutoff_row() -> None:
    """The janitor deletes rows with ``updated_at_ms < cutoff``; the cache
    mirrors exactly that, in every server and user view."""
    cache = MemoryCache(max_servers=4, max_users=4)
    old = [record(MemoryKey.server(g, "c", None), 5, "old") for g in ("g1", "g2")]
    old.append(record(MemoryKey.user("u", "c", None, None), 5, "old"))
    at_cutoff = [record(MemoryKey.server(g, "d", None), 10, "at cutoff") for g in ("g1", "g2")]
    at_cutoff.append(record(MemoryKey.user("u", "d", None, None), 10, "at cutoff"))
    cached_with_rows(cache, *old, *at_cutoff)
    cache.forget_older_than(10, cache.mark())
    assert [cache.cached_record(r.key) for r in old] == [None, None, None]
    assert [cache.cached_record(r.key) for r in at_cutoff] == at_cutoff


def test_cached_record_reads_the_view_of_the_keys_scope_only() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    server_row = record(MemoryKey.server("g", "c", None), 1, "server")
    user_row = record(MemoryKey.user("u", "c", None, None), 1, "user")
    cached_with_rows(cache, server_row, user_row)
    assert cache.cached_record(server_row.key) == server_row
    assert cache.cached_record(user_row.key) == user_row
    assert cache.cached_record(MemoryKey.server("g", "other", None)) is None
    assert cache.cached_record(MemoryKey.server("not cached", "c", None)) is None
    assert cache.cached_record(MemoryKey.user("not cached", "c", None, None)) is None


def test_a_scope_is_held_while_cached_or_loading_and_not_otherwise() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    key = MemoryKey.server("g", "c", None)
    user_key = MemoryKey.user("u", "c", None, None)
    assert not cache.holds_scope(key) and not cache.holds_scope(user_key)
    cache.begin_load("server", "g")
    assert cache.holds_scope(key) and not cache.holds_scope(user_key)
    cache.end_load("server", "g", None)
    assert not cache.holds_scope(key)
    cached_with_rows(cache, record(user_key, 1, "x"))
    assert cache.holds_scope(user_key) and not cache.holds_scope(key)


def test_size_counts_settings_servers_and_users() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cache.put_settings(ServerSettings(server_id="g"), cache.mark())
    cached_with_rows(cache, record(MemoryKey.server("g", "c", None), 1, "x"),
                     record(MemoryKey.user("u1", "c", None, None), 1, "x"),
                     record(MemoryKey.user("u2", "c", None, None), 1, "x"))
    assert cache.size() == 1 + 1 + 2


def test_each_drop_removes_its_view_moves_the_epoch_and_counts_one_invalidation() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cache.put_settings(ServerSettings(server_id="g"), cache.mark())
    cached_with_rows(cache, record(MemoryKey.user("u", "c", None, None), 1, "x"))
    epochs = [cache.epoch]
    cache.drop_user("u")
    epochs.append(cache.epoch)
    cache.drop_settings("g")
    epochs.append(cache.epoch)
    cached_with_rows(cache, record(MemoryKey.server("g", "c", "p"), 1, "x"))
    cache.drop_scopes([MemoryKey.server("g", "c", "p")])
    epochs.append(cache.epoch)
    cache.drop_scopes([MemoryKey.server("g", "c", "p")])  # again: the epoch moves again
    epochs.append(cache.epoch)
    cache.drop_user("u")  # nothing cached for u any more: still a drop
    epochs.append(cache.epoch)
    assert cache.settings.peek("g") is None and cache.users.peek("u") is None
    assert cache.servers.peek("g") is None
    assert len(set(epochs)) == len(epochs)
    assert cache.stats.invalidations == 5


def test_popped_entries_leave_no_stored_time_behind() -> None:
    """The age bookkeeping is bounded like the map: nothing is kept for keys
    that left it."""
    lru: LRU[int, int] = LRU(10)
    lru.expire_after(1_000, lambda: 0)
    for key in range(100):
        lru.install(key, key)
        lru.evict(key)
    assert len(lru) == 0 and len(lru._stored_at) == 0
