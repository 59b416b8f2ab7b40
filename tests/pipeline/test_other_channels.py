"""Other-channel memories: caps, speakers, lineage, scopes, empty rows, render modes."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.plugin_types import OtherChannelParts, RenderMode
from stm_core.store import Stm

from .support import (
    ART,
    DUNGEON,
    GENERAL,
    QUEST,
    Line,
    capture,
    make_turn,
    other_text,
    server_key,
    set_opt_in,
    set_settings,
    user_key,
    write,
)


def numbered(n: int) -> list[Line]:
    return [("user", "Bob", f"line {i}") for i in range(n)]


async def test_raw_lines_default_to_the_last_six(stm: Stm) -> None:
    await capture(stm, server_key(ART), *numbered(10))
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert [f'Bob: "line {i}"' in text for i in range(10)] == [False] * 4 + [True] * 6


async def test_raw_lines_follow_the_server_count_in_both_blocks(stm: Stm) -> None:
    await set_settings(stm, crude_message_count=3)
    await capture(stm, server_key(ART), *numbered(10))
    await write(stm, server_key(ART), summary="Mural.")
    await capture(stm, server_key(GENERAL), *numbered(5))
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert text.count('Bob: "line') == 6
    assert 'Bob: "line 6"' not in text and 'Bob: "line 7"' in text
    assert 'Bob: "line 1"' not in text and 'Bob: "line 2"' in text


async def test_speaker_fallbacks_in_the_same_server(stm: Stm) -> None:
    await capture(stm, server_key(ART), ("user", None, "hello?"), ("model", None, "hi!"),
                  ("user", "", "anyone?"))
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert 'Someone: "hello?"\nTomori: "hi!"\nSomeone: "anyone?"\n]' in text


async def test_speaker_fallbacks_from_another_server_use_the_triggerer(stm: Stm) -> None:
    await set_opt_in(stm)
    await capture(stm, user_key("999", server="H"), ("user", None, "hello?"),
                  ("model", None, "hi!"))
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert 'Alice: "hello?"\nTomori: "hi!"\n]' in text


async def test_content_passes_through_unescaped(stm: Stm) -> None:
    await capture(stm, server_key(ART), ("user", "Bob", 'she said "no"\nthen left'))
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert 'Bob: "she said "no"\nthen left"\n]' in text


async def test_newest_first_capped_at_three(stm: Stm, clock: ManualClock) -> None:
    for channel in ("501", "502", "503", "504", "505"):
        await write(stm, server_key(channel), summary=f"summary of {channel}")
        clock.advance(minutes=1)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    shown = [c for c in ("501", "502", "503", "504", "505") if f"summary of {c}" in text]
    assert shown == ["503", "504", "505"]
    assert text.index("505") < text.index("504") < text.index("503")


async def test_current_channel_never_appears_as_another_channel(stm: Stm) -> None:
    await capture(stm, server_key(QUEST), ("user", "Bob", "right here"))
    await write(stm, server_key(QUEST), summary="here")
    assert other_text(await stm.build_context(make_turn())) is None


async def test_truthy_lineage_filters_other_channels(stm: Stm) -> None:
    await write(stm, server_key(ART, persona="p1"), summary="art by L1", lineage="L1")
    await write(stm, server_key(GENERAL, persona="p2"), summary="general by L2", lineage="L2")
    await write(stm, server_key(DUNGEON, persona="p3"), summary="dungeon, no lineage")
    text = other_text(await stm.build_context(make_turn(persona_id="p1",
                                                        persona_lineage_id="L1")))
    assert text is not None
    assert "art by L1" in text
    assert "general by L2" not in text and "dungeon, no lineage" not in text


async def test_without_lineage_every_persona_matches(stm: Stm) -> None:
    await write(stm, server_key(ART, persona="p1"), summary="art by p1", lineage="L1")
    await write(stm, server_key(ART, persona="p2"), summary="art by p2", lineage="L2")
    await write(stm, server_key(GENERAL), summary="general, no persona")
    text = other_text(await stm.build_context(make_turn(persona_lineage_id=None)))
    assert text is not None
    # One channel appears once per persona.
    assert "art by p1" in text and "art by p2" in text and "general, no persona" in text
    assert text.count("the channel named `art`") == 2


async def test_guild_uses_server_rows_not_user_rows(stm: Stm) -> None:
    await write(stm, user_key(ART, server="G"), summary="alice's own copy")
    await write(stm, user_key("dm-1"), summary="a DM chat")
    assert other_text(await stm.build_context(make_turn())) is None
    await write(stm, server_key(ART), summary="the shared memory")
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "the shared memory" in text and "alice's own copy" not in text


async def test_dm_shows_the_users_other_dm_rows(stm: Stm) -> None:
    await write(stm, user_key("dm-old"), summary="earlier DM chat")
    await write(stm, user_key("dm-now"), summary="this DM")
    await write(stm, user_key(ART, server="G"), summary="guild chat")
    await write(stm, user_key("dm-bob", user="bob"), summary="bob's DM")
    dm = make_turn(server_id=None, channel_id="dm-now")
    text = other_text(await stm.build_context(dm))
    assert text == ("[System: Tomori remembers a recent conversation with Alice in "
                    "<#dm-old> (just now):\nearlier DM chat]")


async def test_dm_with_opt_in_also_recalls_guild_rows(stm: Stm) -> None:
    await set_opt_in(stm)
    await write(stm, user_key("dm-old"), summary="earlier DM chat")
    await write(stm, user_key(ART, server="G"), summary="guild chat")
    text = other_text(await stm.build_context(make_turn(server_id=None, channel_id="dm-now")))
    assert text is not None
    assert "earlier DM chat" in text
    assert ("remembers a recent conversation with Alice in a channel in another server "
            "(just now):\nguild chat]") in text


async def test_rows_with_nothing_to_show_render_nothing_and_take_no_slot(
        stm: Stm, clock: ManualClock) -> None:
    await write(stm, server_key("600"), summary="the only real memory")
    clock.advance(minutes=5)
    for channel in ("601", "602", "603"):
        # Counter-only rows, and a category value that is blank.
        await capture(stm, server_key(channel), counter_increment=1)
    await write(stm, server_key("604"), categories={"goals": "   "})
    text = other_text(await stm.build_context(make_turn()))
    assert text == ("[System: Tomori remembers a recent conversation in <#600> "
                    "(5 minutes ago):\nthe only real memory]")


async def test_no_other_channels_no_item(stm: Stm) -> None:
    ctx = await stm.build_context(make_turn(has_tools=False))
    assert ctx.memory_items == ()


@attrs.frozen
class SummaryOnlyPlugin:
    """A third-party render mode: summaries only, in a format of its own."""

    @hookimpl
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        def render(parts: OtherChannelParts) -> str:
            if parts.body is None:
                return ""
            return f"<<{parts.memory_header.strip()} {parts.body}>>]\n\n"
        return [RenderMode(key="summary_only", render=render)]


async def test_a_plugin_render_mode_changes_the_output(stm: Stm) -> None:
    stm.pm.register(SummaryOnlyPlugin(), name="summary-only")
    await set_settings(stm, render_mode="summary_only")
    await capture(stm, server_key(ART), ("user", "Bob", "raw line"))
    await write(stm, server_key(ART), summary="Mural.")
    await capture(stm, server_key(GENERAL), ("user", "Bob", "only raw here"))
    text = other_text(await stm.build_context(make_turn()))
    assert text == ("<<[System: Tomori remembers a recent conversation in the channel "
                    "named `art` (just now): Mural.>>]")

