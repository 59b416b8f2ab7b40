"""A warm turn reads its state without a loader, and counts it as the loaders do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core._util import telemetry
from stm_core.errors import StorageError
from stm_core.models import CrudeMessage, Turn
from stm_core.pipeline.expiry import is_shown
from stm_core.pipeline.sortcap import first_visible
from stm_core.plugin_types import VisibilityContext
from stm_core.storage.records import MemoryKey, MemoryRecord
from stm_core.store import Stm

from .support import GENERAL, capture, make_turn, server_key


def counts() -> dict[str, int]:
    c = telemetry.counts
    return {"settings_hits": c.settings_hits, "settings_misses": c.settings_misses,
            "server_hits": c.server_hits, "server_misses": c.server_misses,
            "user_hits": c.user_hits, "user_misses": c.user_misses}


async def test_a_warm_guild_turn_counts_three_hits_and_no_miss(stm: Stm) -> None:
    await capture(stm, server_key(GENERAL), ("user", "Bob", "hello"))
    turn = make_turn()
    await stm.build_context(turn)  # loads the views
    hits, misses = stm.cache.stats.hits, stm.cache.stats.misses
    before = counts()
    warm = stm.engine.warm_turn_state(turn.server_id, "alice")
    assert warm is not None
    profile, user, server = warm
    assert server is stm.cache.servers.peek(turn.server_id or "")
    assert user is stm.cache.users.peek("alice")
    assert stm.cache.stats.misses == misses
    assert stm.cache.stats.hits == hits + 3
    after = counts()
    assert {k: after[k] - before[k] for k in after} == {
        "settings_hits": 1, "settings_misses": 0, "server_hits": 1, "server_misses": 0,
        "user_hits": 1, "user_misses": 0}
    assert profile is await stm.engine.profile_for(turn.server_id)


async def test_a_warm_dm_turn_counts_one_user_hit_and_no_miss(stm: Stm) -> None:
    turn = make_turn(server_id=None)
    await stm.build_context(turn)  # loads the user's view
    hits, misses = stm.cache.stats.hits, stm.cache.stats.misses
    before = counts()
    warm = stm.engine.warm_turn_state(None, "alice")
    assert warm is not None
    profile, user, server = warm
    assert user is stm.cache.users.peek("alice") and server is None
    assert (stm.cache.stats.hits, stm.cache.stats.misses) == (hits + 1, misses)
    after = counts()
    assert {k: after[k] - before[k] for k in after} == {
        "settings_hits": 0, "settings_misses": 0, "server_hits": 0, "server_misses": 0,
        "user_hits": 1, "user_misses": 0}
    assert profile is await stm.engine.profile_for(None)


async def test_each_cached_read_counts_one_hit(stm: Stm) -> None:
    guild = make_turn().server_id or ""
    await stm.engine.user_view("alice")
    await stm.engine.server_memories(guild)
    await stm.engine.server_settings(guild)
    await stm.build_context(make_turn())  # warm: hits are counted already
    hits, misses, before = stm.cache.stats.hits, stm.cache.stats.misses, counts()
    assert hits > 0
    await stm.engine.user_view("alice")
    await stm.engine.server_memories(guild)
    await stm.engine.server_settings(guild)
    assert (stm.cache.stats.hits, stm.cache.stats.misses) == (hits + 3, misses)
    after = counts()
    assert {k: after[k] - before[k] for k in after} == {
        "settings_hits": 1, "settings_misses": 0, "server_hits": 1, "server_misses": 0,
        "user_hits": 1, "user_misses": 0}


async def test_each_cold_read_counts_one_miss(stm: Stm) -> None:
    guild = make_turn().server_id or ""
    await stm.build_context(make_turn())
    stm.engine.flush()
    hits, misses, before = stm.cache.stats.hits, stm.cache.stats.misses, counts()
    assert misses > 0
    await stm.engine.user_view("alice")
    await stm.engine.server_memories(guild)
    await stm.engine.server_settings(guild)
    assert (stm.cache.stats.hits, stm.cache.stats.misses) == (hits, misses + 3)
    after = counts()
    assert {k: after[k] - before[k] for k in after} == {
        "settings_hits": 0, "settings_misses": 1, "server_hits": 0, "server_misses": 1,
        "user_hits": 0, "user_misses": 1}


async def test_a_server_whose_settings_left_the_cache_is_not_warm(stm: Stm) -> None:
    """Its memory view alone is not enough: the profile needs its settings
    (another process may have changed them), so the loaders read them."""
    turn = make_turn()
    await stm.build_context(turn)
    stm.cache.drop_settings(turn.server_id or "")
    assert stm.cache.servers.peek(turn.server_id or "") is not None
    assert stm.engine.warm_turn_state(turn.server_id, "alice") is None


async def test_a_cold_state_is_not_counted_and_the_loaders_read_it(stm: Stm) -> None:
    stm.engine.flush()
    hits = stm.cache.stats.hits
    assert stm.engine.warm_turn_state("guild", "alice") is None
    assert stm.engine.warm_turn_state(None, "alice") is None
    assert stm.cache.stats.hits == hits
    await stm.build_context(make_turn())
    assert stm.cache.stats.misses >= 3
    assert stm.engine.warm_turn_state(None, "alice") is not None  # a DM needs the user alone


RECORDS = st.builds(
    lambda summary, messages, categories, age: MemoryRecord(
        key=MemoryKey.server("9", "1", None), summary=summary,
        messages=tuple(CrudeMessage(role="user", content=m, speaker_name=None, timestamp_ms=0)
                       for m in messages),
        categories=categories, updated_at_ms=1_000_000 - age),
    st.one_of(st.none(), st.sampled_from(["", " ", "s"])),
    st.lists(st.sampled_from(["a", " "]), max_size=2),
    st.dictionaries(st.sampled_from(["goals", "hp"]), st.sampled_from(["", " ", "x"])),
    st.integers(min_value=-5, max_value=40))


@settings(max_examples=400, deadline=None)
@given(RECORDS, st.integers(min_value=0, max_value=30), st.integers(min_value=0, max_value=30))
def test_the_walks_expiry_test_is_is_shown(record: MemoryRecord, crude: int, summary: int) -> None:
    now = 1_000_000
    turn = Turn(user_id="42", channel_id="2", server_id="9")
    ctx = VisibilityContext(turn=turn, current=None, current_is_private=False,
                            crossserver_opt_in=False, servers={})
    walked = first_visible([record], turn, (), ctx, 1, now_ms=now, crude_ttl_ms=crude,
                           summary_ttl_ms=summary)
    assert (walked == [record]) == is_shown(record, now, crude_ttl_ms=crude,
                                            summary_ttl_ms=summary)


async def test_a_cached_row_is_read_without_the_database(stm: Stm,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool's and record's read of a row's counter comes from the warm view:
    it answers while the database cannot."""
    key = server_key(GENERAL)
    await capture(stm, key, ("user", "Bob", "hello"))
    await stm.engine.server_memories(key.server_id)
    stored = await stm.adapter.get_memory(key)

    async def unreachable(_key: MemoryKey) -> MemoryRecord | None:
        raise StorageError("the database went away")

    monkeypatch.setattr(stm.adapter, "get_memory", unreachable)
    assert await stm.engine.live_record(key) == stored
