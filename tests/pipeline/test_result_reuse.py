"""A warm build of unchanged memory returns the objects of the last one; any
change in what it holds gives new ones."""

from __future__ import annotations

import gc
import weakref

import attrs

from stm_core.models import ContextItem, StmContext
from stm_core.pipeline import results
from stm_core.pipeline.results import context_item, stm_context
from stm_core.settings import Settings
from stm_core.store import Stm
from stm_core.text import memo as text_memo
from tests.retained import retained_bytes

from .support import GENERAL, QUEST, capture, make_turn, server_key, write


async def test_an_unchanged_warm_build_returns_the_same_context(stm: Stm) -> None:
    await write(stm, server_key(GENERAL), summary="the party rests")
    await capture(stm, server_key(QUEST), ("user", "Bob", "onwards"), counter_increment=9)
    first = await stm.build_context(make_turn(channel_id=QUEST))
    again = await stm.build_context(make_turn(channel_id=QUEST))
    assert again == first and again is first
    await write(stm, server_key(GENERAL), summary="the party wakes")
    changed = await stm.build_context(make_turn(channel_id=QUEST))
    assert changed is not first
    assert "the party wakes" in changed.memory_items[0].text


def test_items_and_contexts_are_reused_only_for_the_very_same_texts() -> None:
    text = "".join(["a", "b"])
    item = context_item(text, "same_channel")
    assert context_item(text, "same_channel") is item
    assert context_item(text, "other_channels") is not item
    equal_text = "".join(["a", "b"])
    assert equal_text is not text
    assert context_item(equal_text, "same_channel") == item
    made = stm_context((item,), None, 2, -1, "freshness")
    assert stm_context((item,), None, 2, -1, "freshness") is made
    assert stm_context((item,), None, 2, 3, "freshness").memory_injection_depth == 3
    assert stm_context((item,), None, 2, -1, "stable").cache_policy == "stable"
    nudge = ContextItem(text="refresh", kind="nudge")
    with_nudge = stm_context((item,), nudge, 2, -1, "freshness")
    assert with_nudge.nudge_item is nudge and with_nudge is not made
    three = (item, item, item)
    assert stm_context(three, None, 2, -1, "freshness") == StmContext(
        memory_items=three, nudge_injection_depth=2, memory_injection_depth=-1)


def test_only_the_last_result_of_each_kind_is_kept() -> None:
    first = context_item("".join(["text ", "first"]), "same_channel")
    first_context = stm_context((first,), None, 2, -1, "freshness")
    gone = [weakref.ref(first), weakref.ref(first_context)]
    del first, first_context
    for n in range(100):
        item = context_item(f"text {n}", "same_channel")
        stm_context((item,), None, 2, -1, "freshness")
    gc.collect()
    assert [ref() for ref in gone] == [None, None]  # nothing older is held
    assert results._last_items["same_channel"].text == "text 99"
    assert len(results._last_items) <= 3 and len(results._last_context) == 1
    again = "".join(["text ", "99"])
    assert context_item(again, "same_channel").text is again  # not the kept one's text


def test_long_texts_do_not_pin_memory() -> None:
    # 300 distinct blocks of 200,000 characters (the budget off): 60 MB if kept.
    def build_many() -> None:
        for n in range(300):
            item = context_item(f"{n:03}" + "x" * 200_000, "other_channels")
            stm_context((item,), None, 2, -1, "freshness")

    held = retained_bytes(build_many)
    assert held < 3 * text_memo.MAX_CHARS, held


def test_derived_settings_follow_the_settings_they_come_from() -> None:
    settings = Settings(ttl_hours=2, summary_ttl_hours=3, fresh_window_minutes=5)
    assert (settings.crude_ttl_ms, settings.summary_ttl_ms, settings.longest_ttl_ms,
            settings.fresh_window_ms) == (7_200_000, 10_800_000, 10_800_000, 300_000)
    changed = attrs.evolve(settings, summary_ttl_hours=1)
    assert (changed.summary_ttl_ms, changed.longest_ttl_ms) == (3_600_000, 7_200_000)
    assert changed == Settings(ttl_hours=2, summary_ttl_hours=1, fresh_window_minutes=5)
