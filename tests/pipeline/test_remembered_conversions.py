"""A text converted before is converted again only when a name it mentions
reads differently: the Discord converter remembers its texts across turns."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core.models import Turn
from stm_core.text import memo as text_memo
from stm_plugins import discord_mentions
from stm_plugins.discord_mentions import convert_discord_mentions
from tests.retained import retained_bytes


def turn(**overrides: object) -> Turn:
    values: dict[str, object] = dict(
        user_id="42", channel_id="1", server_id="9",
        user_names={"42": "Alice", "43": "Bob"},
        channel_names={"100": "general", "200": "art"}, role_names={"7": "mods"})
    values.update(overrides)
    return Turn(**values)  # type: ignore[arg-type]


TEXT = "<@42> asked <@43> in <#100> about <@&7>: see https://discord.com/channels/9/200"


def test_the_same_text_and_names_give_the_same_text_for_every_new_turn() -> None:
    first = convert_discord_mentions(TEXT, turn())
    assert first == ("Alice asked Bob in the channel named `general` about @mods: "
                     "see the channel named `art`")
    assert convert_discord_mentions(TEXT, turn()) == first


def test_a_renamed_user_role_or_channel_is_read_again() -> None:
    convert_discord_mentions(TEXT, turn())
    assert convert_discord_mentions(TEXT, turn(user_names={"42": "Ann", "43": "Bob"})) \
        .startswith("Ann asked Bob")
    assert "@admins" in convert_discord_mentions(TEXT, turn(role_names={"7": "admins"}))
    renamed = convert_discord_mentions(TEXT, turn(channel_names={"100": "lobby", "200": "art"}))
    assert "the channel named `lobby`" in renamed


def test_a_name_that_starts_to_clash_or_a_thread_changes_the_label() -> None:
    convert_discord_mentions(TEXT, turn())
    clash = convert_discord_mentions(TEXT, turn(channel_names={"100": "art", "200": "art"}))
    assert "the channel named `art` (ID: 100)" in clash
    thread = convert_discord_mentions(TEXT, turn(thread_ids={"100"}))
    assert "the thread named `general`" in thread


def test_a_name_that_disappears_leaves_the_mention_as_it_was() -> None:
    convert_discord_mentions(TEXT, turn())
    assert convert_discord_mentions(TEXT, turn(user_names={"43": "Bob"})).startswith(
        "<@42> asked Bob")


def test_a_text_is_remembered_when_it_comes_back() -> None:
    text = "<@42> said hi in <#100>, once"
    convert_discord_mentions(text, turn())
    assert text not in discord_mentions._recent
    again = convert_discord_mentions(text, turn())
    assert discord_mentions._recent[text][0] == again == (
        "Alice said hi in the channel named `general`, once")
    assert convert_discord_mentions(text, turn()) is again


def test_texts_seen_once_are_counted_and_bounded() -> None:
    for n in range(discord_mentions.RECENT_TEXTS * 8):
        convert_discord_mentions(f"<@42> one-off {n}", turn())
    assert len(discord_mentions._seen_once) <= 4 * discord_mentions.RECENT_TEXTS
    assert not any(text.startswith("<@42> one-off") for text in discord_mentions._recent)


def test_the_memo_is_bounded() -> None:
    for n in range(discord_mentions.RECENT_TEXTS * 2):
        for _ in range(2):  # a text is remembered when it comes back
            convert_discord_mentions(f"<@42> #{n}", turn())
    assert len(discord_mentions._recent) <= discord_mentions.RECENT_TEXTS


def test_long_blocks_do_not_pin_memory() -> None:
    # 100 distinct blocks of 200,000 characters (the budget off): 40 MB if kept.
    def convert_many() -> None:
        for n in range(100):
            text = f"<@42> {n:03}" + "x" * 200_000
            for _ in range(2):  # a text is remembered when it comes back
                assert convert_discord_mentions(text, turn()).startswith("Alice ")

    held = retained_bytes(convert_many)
    assert held < 3 * text_memo.MAX_CHARS, held


NAMES = st.dictionaries(st.sampled_from(["42", "43", "44"]), st.sampled_from(["A", "B", "A B"]))
CHANNELS = st.dictionaries(st.sampled_from(["100", "200"]), st.sampled_from(["x", "y"]))
PIECES = st.lists(st.sampled_from(["<@42>", "<@!43>", "<@44>", "<#100>", "<#200>", "<@&7>",
                                   " hi ", "<", ">", "discord"]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(PIECES, st.lists(st.tuples(NAMES, CHANNELS, st.booleans()), min_size=1, max_size=4))
def test_remembered_or_not_the_answer_is_the_one_of_a_fresh_conversion(
        text: str, turns: list[tuple[dict[str, str], dict[str, str], bool]]) -> None:
    for users, channels, thread in turns:
        t = turn(user_names=users, channel_names=channels,
                 thread_ids={"100"} if thread else set())
        remembered = convert_discord_mentions(text, t)
        discord_mentions._recent.clear()
        assert remembered == convert_discord_mentions(text, t)
