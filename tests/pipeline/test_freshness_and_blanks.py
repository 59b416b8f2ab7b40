"""Freshness is measured from the newest shown entry (reference §6), and
blank values never render nor take a capped slot (DESIGN decision 1)."""

from __future__ import annotations

from stm_core._util.clock import ManualClock
from stm_core.store import Stm

from .support import (
    ART,
    DUNGEON,
    GENERAL,
    QUEST,
    make_turn,
    other_text,
    same_text,
    server_key,
    set_categories,
    write,
)


async def test_one_fresh_other_channel_among_stale_ones_makes_the_block_fresh(
        stm: Stm, clock: ManualClock) -> None:
    await write(stm, server_key(ART), summary="stale art")
    await write(stm, server_key(DUNGEON), summary="stale dungeon")
    clock.advance(hours=3)
    await write(stm, server_key(GENERAL), summary="fresh general")
    clock.advance(minutes=5)
    ctx = await stm.build_context(make_turn())
    text = other_text(ctx)
    assert text is not None and "stale art" in text and "fresh general" in text
    assert ctx.memory_injection_depth == 2


async def test_only_stale_other_channels_leave_the_block_anchored(
        stm: Stm, clock: ManualClock) -> None:
    await write(stm, server_key(ART), summary="stale art")
    await write(stm, server_key(GENERAL), summary="stale general")
    clock.advance(hours=3)
    assert (await stm.build_context(make_turn())).memory_injection_depth == -1


async def test_a_row_whose_only_category_text_is_blank_is_not_shown_and_takes_no_slot(
        stm: Stm, clock: ManualClock) -> None:
    for channel in ("501", "502", "503"):
        await write(stm, server_key(channel), summary=f"summary of {channel}")
        clock.advance(minutes=1)
    await write(stm, server_key("504"), categories={"goals": "   ", "mood": "\n\t"})
    clock.advance(minutes=1)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert [c for c in ("501", "502", "503") if f"summary of {c}" in text] == \
        ["501", "502", "503"]
    assert "<#504>" not in text and "Goals" not in text


async def test_blank_category_values_are_left_out_of_other_channel_lines(stm: Stm) -> None:
    await write(stm, server_key(ART), categories={"goals": "  ", "mood": " cheerful "})
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "):\nMood: cheerful]" in text
    assert "Goals" not in text


async def test_blank_category_values_are_left_out_of_the_same_channel_block(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "Mood"])
    await write(stm, server_key(QUEST), categories={"goals": " \n ", "mood": " tense "})
    text = same_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "Mood: tense" in text
    assert "Goals" not in text


async def test_blank_categories_fall_back_to_the_summary_in_category_mode(stm: Stm) -> None:
    await set_categories(stm, ["Goals"])
    await write(stm, server_key(QUEST), summary="the summary", categories={"goals": "   "})
    text = same_text(await stm.build_context(make_turn()))
    assert text is not None and "the summary" in text and "Goals" not in text


async def test_blank_categories_in_summary_mode_render_nothing(stm: Stm) -> None:
    await write(stm, server_key(QUEST), categories={"goals": "   "})
    assert same_text(await stm.build_context(make_turn())) is None


async def test_summary_mode_shows_stored_categories_one_per_line(stm: Stm) -> None:
    await write(stm, server_key(QUEST), categories={"goals": "find the key", "party_mood": "calm"})
    text = same_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "Goals: find the key\nParty Mood: calm" in text
