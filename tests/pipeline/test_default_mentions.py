"""The built-in mention converters (Discord, Slack, identity placeholders),
one rule at a time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stm_core.models import Turn
from stm_plugins.default_mentions import convert_identities
from stm_plugins.discord_mentions import _LINK, _LINK_MARK, convert_discord_mentions
from stm_plugins.slack_mentions import convert_slack_mentions


def turn(**overrides: object) -> Turn:
    values: dict[str, object] = dict(
        user_id="42", channel_id="1", server_id="9", bot_name="Tomori",
        triggerer_name="Alice", user_names={"42": "Alice", "43": "Bob", "U42": "Alice"},
        channel_names={"100": "general", "200": "art", "300": "art", "400": "sketches",
                       "C100": "news", "lobby": "lobby"},
        role_names={"7": "mods", "S7": "devs"}, thread_ids={"400"})
    values.update(overrides)
    return Turn(**values)  # type: ignore[arg-type]


def test_discord_users_roles_and_channels_become_names() -> None:
    text = convert_discord_mentions("<@42> and <@!43> ask <@&7> in <#100>", turn())
    assert text == "Alice and Bob ask @mods in the channel named `general`"


def test_discord_threads_and_name_clashes() -> None:
    t = turn()
    assert convert_discord_mentions("<#400>", t) == "the thread named `sketches`"
    assert convert_discord_mentions("<#200> / <#300>", t) == (
        "the channel named `art` (ID: 200) / the channel named `art` (ID: 300)")


def test_discord_syntax_takes_any_string_id() -> None:
    t = turn(user_names={"alice-7": "Alice"}, channel_names={"art": "art"})
    assert convert_discord_mentions("<@alice-7> in <#art>", t) == (
        "Alice in the channel named `art`")


def test_unknown_ids_stay_as_they_are() -> None:
    text = "<@99> <#99> <@&99> <@U99> <#C99> <!subteam^S99>"
    assert convert_discord_mentions(text, turn()) == text
    assert convert_slack_mentions(text, turn()) == text


def test_discord_links_become_channel_names() -> None:
    text = convert_discord_mentions("see https://discord.com/channels/9/100/555 now", turn())
    assert text == "see the channel named `general` now"
    for host in ("ptb.discord.com", "discordapp.com", "canary.discordapp.com"):
        assert convert_discord_mentions(f"at http://{host}/channels/@me/200", turn()) == (
            "at the channel named `art` (ID: 200)")


_LINK_PIECES = ("https://", "http://", "ptb.", "discord", "app", ".com", "/channels/", "9",
                "@me", "/", "100", "555", " ", "<#", ">", "com/channels", "discord.gg/x")


@given(st.lists(st.sampled_from(_LINK_PIECES), max_size=14).map("".join))
def test_the_link_scan_is_skipped_only_where_no_link_can_be(text: str) -> None:
    # The converter looks for links only in texts holding the mark.
    assert _LINK_MARK in text or _LINK.sub("<#x>", text) == text


@pytest.mark.parametrize(("slack", "named"), [
    ("<@U42>", "Alice"),
    ("<@U42|al>", "Alice"),  # the turn's name wins over the mention's
    ("<@U77|carol>", "carol"),
    ("<#C100>", "the channel named `news`"),
    ("<#C100|old-name>", "the channel named `news`"),
    ("<#C555|random>", "the channel named `random`"),
    ("<!subteam^S7>", "@devs"),
    ("<!subteam^S8|@ops>", "@ops"),
    ("<!here>", "@here"),
    ("<!channel|channel>", "@channel"),
])
def test_slack_mentions_become_names(slack: str, named: str) -> None:
    assert convert_slack_mentions(f"ping {slack}!", turn()) == f"ping {named}!"


def test_each_platform_leaves_the_others_syntax_alone() -> None:
    assert convert_slack_mentions("<@&7> <@!43>", turn()) == "<@&7> <@!43>"
    assert convert_discord_mentions("<#C555|random> <@U77|carol>", turn()) == (
        "<#C555|random> <@U77|carol>")


def test_identity_placeholders_in_both_brace_forms() -> None:
    text = convert_identities("{bot}/{{char}} met {user}, {{User}} and {user_term}", turn())
    assert text == "Tomori/Tomori met Alice, Alice and Alice"
    assert convert_identities("{{user}", turn()) == "{{user}"  # unbalanced: left alone
