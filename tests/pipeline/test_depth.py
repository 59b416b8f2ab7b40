"""Content depth and the freshness override (reference §6)."""

from __future__ import annotations

import pytest

from stm_core._util.clock import ManualClock
from stm_core.pipeline.depth import resolve_memory_depth
from stm_core.settings import MINUTE_MS, Settings
from stm_core.store import Stm

from .support import (
    ART,
    QUEST,
    OpenStm,
    capture,
    make_turn,
    server_key,
    set_settings,
    write,
)

#: content_injection_depth -> (fresh, aged), every row of the reference's table.
TABLE = [(-1, 2, -1), (0, 0, 0), (1, 1, 1), (2, 2, 2), (5, 2, 5), (20, 2, 20)]


@pytest.mark.parametrize(("configured", "fresh", "aged"), TABLE)
def test_resolution_table(configured: int, fresh: int, aged: int) -> None:
    now = 10 * 60 * MINUTE_MS
    window = 60 * MINUTE_MS
    assert resolve_memory_depth(configured, now - window, now, window_ms=window,
                                fresh_depth=2) == fresh
    assert resolve_memory_depth(configured, now - window - 1, now, window_ms=window,
                                fresh_depth=2) == aged
    assert resolve_memory_depth(configured, None, now, window_ms=window,
                                fresh_depth=2) == configured


@pytest.mark.parametrize(("configured", "fresh", "aged"), TABLE)
async def test_same_channel_freshness_end_to_end(stm: Stm, clock: ManualClock,
                                                 configured: int, fresh: int,
                                                 aged: int) -> None:
    await set_settings(stm, content_injection_depth=configured)
    await write(stm, server_key(QUEST), summary="live")
    clock.advance(minutes=60)  # the window is inclusive
    assert (await stm.build_context(make_turn())).memory_injection_depth == fresh
    clock.advance(ms=1)
    assert (await stm.build_context(make_turn())).memory_injection_depth == aged


async def test_a_recent_other_channel_makes_the_block_fresh(stm: Stm,
                                                            clock: ManualClock) -> None:
    await write(stm, server_key(QUEST), summary="quiet here")
    clock.advance(hours=3)
    assert (await stm.build_context(make_turn())).memory_injection_depth == -1
    await capture(stm, server_key(ART), ("user", "Bob", "busy over here"))
    clock.advance(minutes=5)
    assert (await stm.build_context(make_turn())).memory_injection_depth == 2


async def test_a_crude_capture_keeps_the_summary_fresh(stm: Stm, clock: ManualClock) -> None:
    await write(stm, server_key(QUEST), summary="live")
    clock.advance(hours=2)
    await capture(stm, server_key(QUEST), ("user", "Alice", "still talking"))
    assert (await stm.build_context(make_turn())).memory_injection_depth == 2


async def test_hidden_memories_do_not_make_the_block_fresh(stm: Stm,
                                                           clock: ManualClock) -> None:
    await set_settings(stm, private_channel_ids=["700"])
    await write(stm, server_key(ART), summary="old public")
    clock.advance(hours=3)
    await write(stm, server_key("700"), summary="new private")
    ctx = await stm.build_context(make_turn())
    assert "new private" not in ctx.memory_items[0].text
    assert ctx.memory_injection_depth == -1


async def test_the_current_channels_raw_lines_keep_the_block_fresh(
        stm: Stm, clock: ManualClock) -> None:
    # Freshness tracks the last turn the bot took part in (spec, Freshness):
    # the live row counts even though only its raw lines exist.
    await write(stm, server_key(ART), summary="old news")
    clock.advance(hours=3)
    await capture(stm, server_key(QUEST), ("user", "Alice", "still here"))
    ctx = await stm.build_context(make_turn())
    assert [item.kind for item in ctx.memory_items] == ["other_channels"]
    assert ctx.memory_injection_depth == 2
    clock.advance(minutes=61)
    assert (await stm.build_context(make_turn())).memory_injection_depth == -1


async def test_nothing_rendered_is_never_fresh(stm: Stm) -> None:
    # The current channel has raw lines only: nothing is rendered for it.
    await capture(stm, server_key(QUEST), ("user", "Alice", "hello"))
    ctx = await stm.build_context(make_turn())
    assert ctx.memory_items == ()
    assert ctx.memory_injection_depth == -1


async def test_no_freshness_without_tools(stm: Stm) -> None:
    await set_settings(stm, content_injection_depth=5)
    await write(stm, server_key(ART), summary="just now")
    ctx = await stm.build_context(make_turn(has_tools=False))
    assert len(ctx.memory_items) == 1
    assert ctx.memory_injection_depth == 5


async def test_fresh_settings_are_honoured(open_stm: OpenStm, clock: ManualClock) -> None:
    env = Settings(fresh_window_minutes=10, fresh_injection_depth=4)
    async with open_stm("memory://", settings=env) as stm:
        await set_settings(stm, content_injection_depth=7)
        await write(stm, server_key(QUEST), summary="live")
        clock.advance(minutes=10)
        assert (await stm.build_context(make_turn())).memory_injection_depth == 4
        clock.advance(ms=1)
        assert (await stm.build_context(make_turn())).memory_injection_depth == 7
