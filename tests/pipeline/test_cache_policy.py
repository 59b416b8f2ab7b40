"""The per-server cache policy: under ``stable`` the rendered text changes only
when memory does, the block never moves for freshness and the nudge sits last."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ConfigurationError
from stm_core.inject import inject
from stm_core.inject.prompt_reuse import HostPrompts, prompt_text
from stm_core.settings import Settings
from stm_core.store import Stm

from .support import (
    ART,
    GENERAL,
    QUEST,
    OpenStm,
    capture,
    make_turn,
    other_text,
    server_key,
    set_settings,
    user_key,
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


async def test_a_stable_conversation_keeps_its_previous_prompt_until_memory_changes(
        stm: Stm, clock: ManualClock) -> None:
    """Turn after turn, with the clock moving and the nudge coming and going,
    the previous prompt (but its nudge) is the start of the next one; a memory
    write moves the block to the tail, where it stays again."""
    await set_settings(stm, cache_policy="stable", refresh_cadence=2)
    await _seed(stm)
    host = HostPrompts()
    dialogue: list[dict[str, Any]] = [{"role": "system", "content": "You are Tomori."}]
    previous: str | None = None
    nudged = 0
    for n in range(8):
        clock.advance(minutes=7)
        dialogue.append({"role": "user", "content": f"Alice: move {n}"})
        ctx = await stm.build_context(make_turn())
        prompt = host.prompt("quest", dialogue, ctx)
        if previous is not None:
            assert prompt_text(prompt).startswith(previous), f"turn {n}"
        nudge = ctx.nudge_item.text if ctx.nudge_item else None
        nudged += nudge is not None
        previous = prompt_text([m for m in prompt if m["content"] != nudge])
        dialogue.append({"role": "assistant", "content": f"reply {n}"})
        await capture(stm, server_key(QUEST), ("user", "Alice", f"move {n}"),
                      counter_increment=1)
    assert nudged, "the nudge came and went during the run"
    await write(stm, server_key(ART), summary="We painted the crypt instead.")
    dialogue.append({"role": "user", "content": "Alice: and now?"})
    ctx = await stm.build_context(make_turn())
    prompt = host.prompt("quest", dialogue, ctx)
    tail = [m["content"] for m in prompt[len(dialogue):]]
    assert tail[-1] == (ctx.nudge_item.text if ctx.nudge_item else tail[-1])
    assert any("painted the crypt" in t for t in tail), "a changed block goes to the tail"
    assert previous is not None and not prompt_text(prompt).startswith(previous)


async def test_the_default_policy_covers_direct_messages_and_unset_servers(
        open_stm: OpenStm, backend_url: str, clock: ManualClock) -> None:
    settings = attrs.evolve(Settings(), default_cache_policy="stable")
    async with open_stm(backend_url, settings=settings) as stm:
        await write(stm, user_key("dm-old"), summary="earlier DM chat")
        await _seed(stm)
        clock.advance(minutes=3)
        dm = await stm.build_context(make_turn(server_id=None, channel_id="dm-now"))
        assert dm.cache_policy == "stable" and " ago)" not in (other_text(dm) or "x ago)")
        guild = await stm.build_context(make_turn())
        assert guild.cache_policy == "stable" and guild.memory_injection_depth == 0
        assert (await stm.admin.server_params("G")).cache_policy == "stable"
        # A server's own choice wins over the default.
        await set_settings(stm, cache_policy="freshness")
        again = await stm.build_context(make_turn())
        assert again.cache_policy == "freshness" and "(3 minutes ago)" in (other_text(again)
                                                                           or "")


@pytest.mark.parametrize("value", ["Stable", "", "none", 1])
def test_a_bad_default_policy_is_a_configuration_error(value: object) -> None:
    with pytest.raises(ConfigurationError, match="STM_DEFAULT_CACHE_POLICY"):
        Settings(default_cache_policy=value)  # type: ignore[arg-type]


def test_the_default_policy_from_the_environment() -> None:
    assert Settings.from_env({"STM_DEFAULT_CACHE_POLICY": "stable"}).cache_policy == "stable"
    assert Settings.from_env({}).cache_policy == "freshness"
    with pytest.raises(ConfigurationError, match="STM_DEFAULT_CACHE_POLICY"):
        Settings.from_env({"STM_DEFAULT_CACHE_POLICY": "warm"})
