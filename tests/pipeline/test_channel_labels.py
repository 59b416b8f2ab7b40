"""Channel labels: an ID suffix exactly when another channel of the turn has
the same name, whichever way the clash is found."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core.mention_names import channel_label
from stm_core.models import Turn

NAMES = st.sampled_from(["general", "art", "off-topic", "art ", "Art"])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([str(n) for n in range(12)]), NAMES, max_size=12))
def test_suffix_only_for_names_shared_by_two_channels(names: dict[str, str]) -> None:
    turn = Turn(user_id="1", channel_id="0", server_id="9", channel_names=names)
    for channel, name in names.items():
        shared = sum(1 for other in names.values() if other == name) > 1
        want = f"the channel named `{name}`" + (f" (ID: {channel})" if shared else "")
        assert channel_label(channel, turn) == want


def test_distinct_names_and_one_clash_in_a_large_server() -> None:
    names = {str(n): f"chan-{n}" for n in range(5000)}
    distinct = Turn(user_id="1", channel_id="0", server_id="9", channel_names=names)
    assert channel_label("4999", distinct) == "the channel named `chan-4999`"
    clashing = Turn(user_id="1", channel_id="0", server_id="9",
                    channel_names={**names, "extra": "chan-7"})
    assert channel_label("7", clashing) == "the channel named `chan-7` (ID: 7)"
    assert channel_label("extra", clashing) == "the channel named `chan-7` (ID: extra)"
    assert channel_label("8", clashing) == "the channel named `chan-8`"


def test_turns_asked_about_in_turn_each_get_their_own_clashes() -> None:
    clashing = Turn(user_id="1", channel_id="0", server_id="9",
                    channel_names={"1": "art", "2": "art"})
    distinct = Turn(user_id="1", channel_id="0", server_id="9",
                    channel_names={"1": "art", "2": "general"})
    for _ in range(2):  # alternating: each answer is the turn's own
        assert channel_label("1", clashing) == "the channel named `art` (ID: 1)"
        assert channel_label("1", distinct) == "the channel named `art`"
