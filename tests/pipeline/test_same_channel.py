"""The same-channel block: tools only, live scope, modes, order, stale values."""

from __future__ import annotations

from stm_core.store import Stm

from .support import (
    QUEST,
    capture,
    make_turn,
    same_text,
    server_key,
    set_categories,
    set_settings,
    user_key,
    write,
)

HEAD = "[System: Tomori's short term memory for this ongoing conversation:\n"


async def test_only_on_turns_with_tools(stm: Stm) -> None:
    await write(stm, server_key(QUEST), summary="The crypt.")
    assert same_text(await stm.build_context(make_turn(has_tools=False))) is None
    assert same_text(await stm.build_context(make_turn())) == HEAD + "The crypt.]"


async def test_guild_reads_the_shared_row_of_the_turns_persona(stm: Stm) -> None:
    await write(stm, server_key(QUEST, persona="p1"), summary="p1's memory")
    await write(stm, server_key(QUEST, persona="p2"), summary="p2's memory")
    await write(stm, user_key(QUEST, server="G", persona="p1"), summary="alice's copy")
    text = same_text(await stm.build_context(make_turn(persona_id="p1")))
    assert text == HEAD + "p1's memory]"
    assert same_text(await stm.build_context(make_turn(persona_id="p3"))) is None


async def test_dm_reads_the_users_row(stm: Stm) -> None:
    await write(stm, user_key("dm-1"), summary="our DM so far")
    await write(stm, user_key("dm-1", user="bob"), summary="bob's DM")
    text = same_text(await stm.build_context(make_turn(server_id=None, channel_id="dm-1")))
    assert text == HEAD + "our DM so far]"


async def test_raw_lines_are_never_shown_for_the_current_channel(stm: Stm) -> None:
    await capture(stm, server_key(QUEST), ("user", "Bob", "live line"))
    assert same_text(await stm.build_context(make_turn())) is None
    await write(stm, server_key(QUEST), summary="The crypt.")
    for mode in ("crude_summary", "supersede"):
        await set_settings(stm, render_mode=mode)
        assert same_text(await stm.build_context(make_turn())) == HEAD + "The crypt.]"


async def test_category_mode_follows_position_order_and_skips_blanks(stm: Stm) -> None:
    await set_categories(stm, ["Mood", "Goals", "HP/MP"])
    await write(stm, server_key(QUEST), categories={"hp_mp": "  Alice 12/30  ", "mood": " ",
                                                    "goals": "Find the exit"})
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "Goals: Find the exit\nHP/MP: Alice 12/30]"


async def test_unconfigured_slugs_are_hidden(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await write(stm, server_key(QUEST), categories={"old_topic": "forgotten",
                                                    "goals": "Find the exit"})
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "Goals: Find the exit]"


async def test_category_order_holds_after_categories_are_reconfigured(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await write(stm, server_key(QUEST), categories={"goals": "Find the exit",
                                                    "hp_mp": "Alice 12/30"})
    await set_categories(stm, ["HP/MP", "Goals"])
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "HP/MP: Alice 12/30\nGoals: Find the exit]"


async def test_summary_mode_prefers_the_summary_over_stale_categories(stm: Stm) -> None:
    await write(stm, server_key(QUEST), categories={"goals": "stale goal"})
    await write(stm, server_key(QUEST), summary="The fresh summary.")
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "The fresh summary.]"


async def test_summary_mode_without_a_summary_shows_humanised_categories(stm: Stm) -> None:
    await write(stm, server_key(QUEST), categories={"party_status": "all fine"})
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "Party Status: all fine]"


async def test_category_mode_falls_back_to_the_summary(stm: Stm) -> None:
    await set_categories(stm, ["Goals"])
    await write(stm, server_key(QUEST), summary="Written before categories existed.")
    text = same_text(await stm.build_context(make_turn()))
    assert text == HEAD + "Written before categories existed.]"
