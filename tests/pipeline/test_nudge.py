"""The nudge: cadence timeline, gates, texts, overrides, placeholders."""

from __future__ import annotations

from stm_core.models import Turn
from stm_core.store import Stm

from .support import (
    ART,
    QUEST,
    OpenStm,
    capture,
    make_turn,
    same_text,
    server_key,
    set_categories,
    set_settings,
    user_key,
    write,
)

#: The default nudge of a host that declares no long-term-memory tool.
SUMMARY_NUDGE = (
    "[System: After responding, use `update_short_term_memory` to create or update your "
    "short-term memory for this conversation.]")


async def bot_turn(stm: Stm, turn: Turn, *, comply: bool = True) -> bool:
    """One bot turn: build the context, call the tool if nudged, record the turn."""
    ctx = await stm.build_context(turn)
    nudged = ctx.nudge_item is not None
    key = (server_key(turn.channel_id, turn.persona_id) if turn.server_id
           else user_key(turn.channel_id, persona=turn.persona_id))
    if nudged and comply:
        await write(stm, key, summary="refreshed", reset_counter=True)
    await capture(stm, key, ("user", "Alice", "hi"), ("model", "Tomori", "hello"),
                  counter_increment=1)
    return nudged


async def test_cadence_timeline_first_nudge_on_the_sixth_bot_turn(stm: Stm) -> None:
    turn = make_turn(persona_id="p1")
    nudges = [await bot_turn(stm, turn) for _ in range(16)]
    assert [i + 1 for i, n in enumerate(nudges) if n] == [6, 11, 16]


async def test_an_ignored_nudge_repeats_every_turn(stm: Stm) -> None:
    turn = make_turn()
    nudges = [await bot_turn(stm, turn, comply=False) for _ in range(8)]
    assert nudges == [False] * 5 + [True] * 3


async def test_cadence_one_nudges_from_the_second_turn(stm: Stm) -> None:
    await set_settings(stm, refresh_cadence=1)
    nudges = [await bot_turn(stm, make_turn()) for _ in range(4)]
    assert nudges == [False, True, True, True]


async def test_dm_cadence_counts_on_the_users_row(stm: Stm) -> None:
    turn = make_turn(server_id=None, channel_id="dm-1")
    nudges = [await bot_turn(stm, turn) for _ in range(6)]
    assert nudges == [False] * 5 + [True]


async def due(stm: Stm) -> None:
    await capture(stm, server_key(QUEST), counter_increment=5)


async def test_default_summary_mode_text(stm: Stm) -> None:
    await due(stm)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is not None
    assert ctx.nudge_item.text == SUMMARY_NUDGE
    assert ctx.nudge_item.kind == "nudge"
    assert ctx.nudge_injection_depth == 2
    assert ctx.nudge_item not in ctx.memory_items


async def test_nudge_depth_comes_from_the_server(stm: Stm) -> None:
    await due(stm)
    await set_settings(stm, nudge_injection_depth=0)
    assert (await stm.build_context(make_turn())).nudge_injection_depth == 0


async def test_suppressed_without_tools(stm: Stm) -> None:
    await due(stm)
    ctx = await stm.build_context(make_turn(has_tools=False))
    assert ctx.nudge_item is None


async def test_suppressed_for_novelai_while_content_renders(stm: Stm) -> None:
    await due(stm)
    await write(stm, server_key(QUEST), summary="still here")
    ctx = await stm.build_context(make_turn(provider="novelai"))
    assert ctx.nudge_item is None
    assert same_text(ctx) is not None


async def test_suppressed_by_explicit_long_term_intent(stm: Stm) -> None:
    await due(stm)
    ctx = await stm.build_context(make_turn(explicit_long_term_intent=True))
    assert ctx.nudge_item is None


async def test_capability_off_stops_the_nudge_not_the_content(stm: Stm) -> None:
    await due(stm)
    await write(stm, server_key(QUEST), summary="hand-curated")
    await write(stm, server_key(ART), summary="another channel")
    await set_settings(stm, stm_enabled=False)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is None
    assert [i.kind for i in ctx.memory_items] == ["other_channels", "same_channel"]


async def test_category_mode_nudge_lists_the_labels(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await due(stm)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is not None
    assert "short-term memory fields: Goals, HP/MP." in ctx.nudge_item.text
    assert "{" not in ctx.nudge_item.text


async def test_override_is_verbatim_expanded_sanitised_and_converted(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await set_settings(stm, update_nudge_override=(
        "Keep {category_labels} current, {user}. Again: {category_labels}. "
        "Use {short_term_memory_tool}. {made_up} {{also_made_up}} {{bot}} <#111> {1abc}"))
    await due(stm)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is not None
    assert ctx.nudge_item.text == (
        "Keep Goals, HP/MP current, Alice. Again: Goals, HP/MP. "
        "Use `update_short_term_memory`. made_up also_made_up Tomori "
        "the channel named `art` {1abc}")


async def test_category_labels_are_stripped_in_summary_mode(stm: Stm) -> None:
    await set_settings(stm, update_nudge_override="Update {category_labels} now.")
    await due(stm)
    ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is not None
    assert ctx.nudge_item.text == "Update category_labels now."



async def test_an_override_that_renders_to_nothing_inserts_no_empty_nudge(
        open_stm: OpenStm, backend_url: str) -> None:
    """An override made only of a macro that expands to nothing gives an
    empty nudge text; an empty message is never put into the prompt."""
    from hookspecs import hookimpl

    class Silent:
        @hookimpl
        def stm_prompt_macros(self) -> dict[str, str]:
            return {"nothing": ""}

    async with open_stm(backend_url, plugins=[Silent()]) as stm:
        await set_settings(stm, update_nudge_override="{nothing}")
        await due(stm)
        ctx = await stm.build_context(make_turn())
    assert ctx.nudge_item is None
