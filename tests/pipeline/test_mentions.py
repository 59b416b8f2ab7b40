"""Mention conversion runs on every emitted text, through every converter, in order."""

from __future__ import annotations

from collections.abc import Iterable

from stm_core.plugin_types import MentionConverter

from hookspecs import hookimpl
from stm_core.models import Turn
from stm_core.store import Stm
from stm_plugins.discord_mentions import convert_discord_mentions

from .support import (
    ART,
    QUEST,
    capture,
    make_turn,
    other_text,
    same_text,
    server_key,
    set_settings,
    write,
)


class Redactor:
    """A third-party converter that runs before the default one."""

    @hookimpl
    def stm_mention_converters(self) -> Iterable[MentionConverter]:
        def redact(text: str, turn: Turn) -> str:
            # Runs first: the default converter has not named <@42> yet.
            return text.replace("<@42>", "<@42> (REDACTED)").replace("SECRET", "[hidden]")
        return [redact]


async def test_every_item_is_converted(stm: Stm) -> None:
    stm.pm.register(Redactor(), name="redactor")
    await set_settings(stm, update_nudge_override="SECRET nudge for {user} about <#111>")
    await write(stm, server_key(ART), summary="<@42> painted SECRET things with {user}")
    await write(stm, server_key(QUEST), summary="{bot} and <@42> found the SECRET door")
    await capture(stm, server_key(QUEST), counter_increment=5)
    turn = make_turn(user_names={"42": "Bob"})
    ctx = await stm.build_context(turn)
    assert other_text(ctx) == ("[System: Tomori remembers a recent conversation in the "
                               "channel named `art` (just now):\n"
                               "Bob (REDACTED) painted [hidden] things with Alice]")
    assert same_text(ctx) == ("[System: Tomori's short term memory for this ongoing "
                              "conversation:\nTomori and Bob (REDACTED) found the [hidden] door]")
    assert ctx.nudge_item is not None
    assert ctx.nudge_item.text == "[hidden] nudge for Alice about the channel named `art`"


async def test_a_stored_user_placeholder_names_whoever_triggers_the_turn(stm: Stm) -> None:
    await write(stm, server_key(ART), summary="{user} asked about the mural")
    bob_turn = make_turn(user_id="bob", triggerer_name="Bob")
    assert "Bob asked about the mural" in (other_text(await stm.build_context(bob_turn)) or "")


async def test_unknown_channels_and_threads(stm: Stm) -> None:
    await write(stm, server_key("555"), summary="somewhere unnamed")
    await write(stm, server_key("556"), summary="in a thread", parent=ART)
    turn = make_turn(channel_names={"556": "sketches"}, thread_ids={"556"})
    text = other_text(await stm.build_context(turn))
    assert text is not None
    assert "conversation in <#555> (just now)" in text
    assert "conversation in the thread named `sketches` (just now)" in text


async def test_headers_name_channels_with_any_string_id(stm: Stm) -> None:
    await write(stm, server_key("art"), summary="the mural")
    turn = make_turn(channel_names={"art": "art"})
    text = other_text(await stm.build_context(turn))
    assert text is not None
    assert text.startswith("[System: Tomori remembers a recent conversation in the "
                           "channel named `art` (just now):")
    assert "<#" not in text


async def test_slack_mentions_in_memories_are_named(stm: Stm) -> None:
    await write(stm, server_key("C2"), summary="<@U1> asked <!subteam^S1|@ops> in <#C3|deploys>")
    await write(stm, server_key(QUEST), summary="<@U1> is on call")
    await capture(stm, server_key(QUEST), counter_increment=0)
    turn = make_turn(user_names={"U1": "Dana"}, channel_names={"C2": "general"})
    ctx = await stm.build_context(turn)
    assert other_text(ctx) == ("[System: Tomori remembers a recent conversation in the "
                               "channel named `general` (just now):\n"
                               "Dana asked @ops in the channel named `deploys`]")
    assert same_text(ctx) == ("[System: Tomori's short term memory for this ongoing "
                              "conversation:\nDana is on call]")


def test_interleaved_turns_convert_mentions_with_their_own_names() -> None:
    alice = make_turn(user_names={"7": "Alice"})
    bob = make_turn(user_names={"7": "Bob"})
    for _ in range(2):  # one turn's converted tokens never answer for another
        assert convert_discord_mentions("hi <@7>", alice) == "hi Alice"
        assert convert_discord_mentions("hi <@7>", bob) == "hi Bob"
