"""The per-server cache policy: under ``stable`` the rendered text changes only
when memory does, the block never moves for freshness and the nudge sits last."""

from __future__ import annotations

from stm_core.clock import ManualClock
from stm_core.inject import inject
from stm_core.store import Stm

from .support import (
    ART,
    GENERAL,
    QUEST,
    capture,
    make_turn,
    other_text,
    server_key,
    set_settings,
    write,
)


async def _seed(stm: Stm) -> None:
    await capture(stm, server_key(GENERAL), ("user", "Bob", "the dragon sleeps"))
    await write(stm, server_key(ART), summary="We drew the castle at dusk.")
    await capture(stm, server_key(QUEST), ("user", "Alice", "onwards"), counter_increment=5)
    await write(stm, server_key(QUEST), summary="The party reached the crypt.")


async def test_freshness_is_the_default_and_keeps_ages_and_the_fresh_move(
        stm: Stm, clock: ManualClock) -> None:
    await _seed(stm)
    clock.advance(minutes=3)
    ctx = await stm.build_context(make_turn())
    assert "(3 minutes ago)" in (other_text(ctx) or "")
    assert ctx.memory_injection_depth == stm.settings.fresh_injection_depth
    assert ctx.nudge_injection_depth == 2


async def test_stable_text_does_not_change_with_the_clock(stm: Stm, clock: ManualClock) -> None:
    await set_settings(stm, cache_policy="stable")
    await _seed(stm)
    first = await stm.build_context(make_turn())
    text = other_text(first)
    assert text is not None and "castle at dusk" in text
    assert " ago)" not in text and "(just now)" not in text
    for minutes in (1, 59, 61, 60 * 5):
        clock.advance(minutes=minutes)
        later = await stm.build_context(make_turn())
        assert later.memory_items == first.memory_items
        assert later.memory_injection_depth == first.memory_injection_depth == 0
    # A memory change is what changes the text.
    await write(stm, server_key(ART), summary="We painted the crypt instead.")
    changed = await stm.build_context(make_turn())
    assert "painted the crypt" in (other_text(changed) or "")


async def test_stable_keeps_a_configured_depth_and_puts_the_nudge_last(
        stm: Stm, clock: ManualClock) -> None:
    await set_settings(stm, cache_policy="stable", content_injection_depth=6,
                       nudge_injection_depth=4, refresh_cadence=1)
    await _seed(stm)
    await capture(stm, server_key(QUEST), ("user", "Alice", "more"), counter_increment=3)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is not None
    assert (ctx.memory_injection_depth, ctx.nudge_injection_depth) == (6, 0)
    dialogue = [{"role": "system", "content": "sys"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(10)]
    out = inject(dialogue, ctx)
    assert out[-1]["content"] == ctx.nudge_item.text, "the volatile nudge is last"
    assert out[:len(dialogue) - 6] == dialogue[:len(dialogue) - 6]


async def test_stable_block_without_tools_is_not_anchored_above_the_dialogue(
        stm: Stm) -> None:
    await set_settings(stm, cache_policy="stable")
    await _seed(stm)
    ctx = await stm.build_context(make_turn(has_tools=False))
    assert ctx.memory_items and ctx.memory_injection_depth == 0
