"""The built-in mention converter, one rule at a time."""

from __future__ import annotations

from stm_core.models import Turn
from stm_plugins.default_mentions import convert_mentions


def turn(**overrides: object) -> Turn:
    values: dict[str, object] = dict(
        user_id="42", channel_id="1", server_id="9", bot_name="Tomori",
        triggerer_name="Alice", user_names={"42": "Alice", "43": "Bob"},
        channel_names={"100": "general", "200": "art", "300": "art", "400": "sketches"},
        role_names={"7": "mods"}, thread_ids={"400"})
    values.update(overrides)
    return Turn(**values)  # type: ignore[arg-type]


def test_users_roles_and_channels_become_names() -> None:
    text = convert_mentions("<@42> and <@!43> ask <@&7> in <#100>", turn())
    assert text == "Alice and Bob ask @mods in the channel named `general`"


def test_threads_and_name_clashes() -> None:
    t = turn()
    assert convert_mentions("<#400>", t) == "the thread named `sketches`"
    assert convert_mentions("<#200> / <#300>", t) == (
        "the channel named `art` (ID: 200) / the channel named `art` (ID: 300)")


def test_unknown_ids_stay_as_they_are() -> None:
    assert convert_mentions("<@99> <#99> <@&99>", turn()) == "<@99> <#99> <@&99>"


def test_discord_links_become_channel_names() -> None:
    text = convert_mentions("see https://discord.com/channels/9/100/555 now", turn())
    assert text == "see the channel named `general` now"


def test_identity_placeholders_in_both_brace_forms() -> None:
    text = convert_mentions("{bot}/{{char}} met {user}, {{User}} and {user_term}", turn())
    assert text == "Tomori/Tomori met Alice, Alice and Alice"
    assert convert_mentions("{{user}", turn()) == "{{user}"  # unbalanced: left alone
