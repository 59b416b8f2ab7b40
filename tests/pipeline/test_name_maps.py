"""NameMap and IdSet: checked once, kept as they are by every Turn, read-only,
and a build reads the same with them as with plain mappings."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core import IdSet, NameMap, Turn, ValidationError
from stm_core._util.clock import ManualClock
from stm_core.mention_names import channel_label
from stm_core.name_maps import shared_names

from .support import ART, CHANNEL_NAMES, DUNGEON, GENERAL, OpenStm, make_turn, server_key, write


def test_ids_become_strings_and_anything_but_text_is_refused() -> None:
    names = NameMap({1001: "general", "1002": "art"})
    assert names == {"1001": "general", "1002": "art"}
    assert NameMap() == {} and NameMap(None) == {}
    with pytest.raises(ValidationError, match=r"names\['1'\] must be text"):
        NameMap({"1": 2})
    with pytest.raises(ValidationError, match="names key"):
        NameMap({1.5: "x"})
    with pytest.raises(ValidationError, match="names must be a mapping"):
        NameMap(["general"])  # type: ignore[arg-type]
    assert IdSet([5, "6"]) == {"5", "6"} and IdSet() == frozenset()
    for bad in (1.5, True, None, b"7"):
        with pytest.raises(ValidationError, match="ids item"):
            IdSet([bad])
    with pytest.raises(ValidationError, match="ids"):
        IdSet(7)  # type: ignore[arg-type]


CHANGES: list[Callable[[NameMap], Any]] = [
    lambda m: m.__setitem__("9", "x"), lambda m: m.__delitem__("1"), lambda m: m.clear(),
    lambda m: m.pop("1"), lambda m: m.popitem(), lambda m: m.setdefault("9", "x"),
    lambda m: m.update({"9": "x"}), lambda m: m.__ior__({"9": "x"}),
]


@pytest.mark.parametrize("change", CHANGES)
def test_a_name_map_cannot_be_changed(change: Callable[[NameMap], Any]) -> None:
    names = NameMap({"1": "general"})
    with pytest.raises(TypeError, match="cannot be changed"):
        change(names)
    assert names == {"1": "general"}


def test_a_turn_keeps_them_as_they_are_and_copies_plain_mappings() -> None:
    names, threads = NameMap(CHANNEL_NAMES), IdSet([ART])
    turns = [make_turn(channel_names=names, user_names=names, role_names=names,
                       thread_ids=threads) for _ in range(3)]
    assert all(t.channel_names is names and t.user_names is names and t.role_names is names
               and t.thread_ids is threads for t in turns)
    plain = dict(CHANNEL_NAMES)
    turn = make_turn(channel_names=plain)
    plain[GENERAL] = "renamed"
    assert turn.channel_names is not plain and turn.channel_names[GENERAL] == "general"


def test_they_survive_pickle_and_copy() -> None:
    names, threads = NameMap({"1": "a", "2": "a"}), IdSet(["1"])
    for clone in (pickle.loads(pickle.dumps(names)), copy.copy(names), copy.deepcopy(names)):
        assert type(clone) is NameMap and clone == names
        assert clone.shared_names() == {"a"}
    again = pickle.loads(pickle.dumps(threads))
    assert type(again) is IdSet and again == threads


def test_shared_names_are_found_once_per_map() -> None:
    names = NameMap({str(n): f"chan-{n % 4000}" for n in range(5000)})
    first = names.shared_names()
    assert first == {f"chan-{n}" for n in range(1000)}
    assert names.shared_names() is first
    turns = [Turn(user_id="1", channel_id="0", server_id="9", channel_names=names)
             for _ in range(2)]
    assert channel_label("4001", turns[0]) == "the channel named `chan-1` (ID: 4001)"
    assert channel_label("3999", turns[1]) == "the channel named `chan-3999`"
    assert names.shared_names() is first


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([str(n) for n in range(10)]),
                       st.sampled_from(["general", "art", "Art", "art "]), max_size=10))
def test_labels_read_the_same_from_a_name_map_and_a_plain_one(names: dict[str, str]) -> None:
    plain = Turn(user_id="1", channel_id="0", server_id="9", channel_names=names)
    checked = Turn(user_id="1", channel_id="0", server_id="9", channel_names=NameMap(names))
    assert shared_names(checked.channel_names) == shared_names(plain.channel_names)
    for channel in names:
        assert channel_label(channel, checked) == channel_label(channel, plain)


NAME_LISTS = st.lists(st.sampled_from(["general", "art", "Art", "art "]), max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAME_LISTS, min_size=1, max_size=6))
def test_plain_maps_remembered_by_their_names_answer_as_a_fresh_count(
        maps: list[list[str]]) -> None:
    # New dicts each time, often with names seen before (as a host builds a
    # map per turn), and renames that make or break a clash.
    for values in maps + maps[::-1]:
        names = {str(n): name for n, name in enumerate(values)}
        counted = {name for name in values if values.count(name) > 1}
        assert shared_names(dict(names)) == counted


async def test_a_build_reads_the_same_with_checked_maps(open_stm: OpenStm, backend_url: str,
                                                       clock: ManualClock) -> None:
    names = {**CHANNEL_NAMES, DUNGEON: "art"}  # two channels share a name
    async with open_stm(backend_url) as stm:
        for channel in (GENERAL, ART, DUNGEON):
            clock.advance(ms=1000)
            await write(stm, server_key(channel),
                        summary=f"talked in <#{channel}> with <@bob>")
        people = {"bob": "Bob"}
        plain = await stm.build_context(make_turn(channel_names=names, user_names=people,
                                                  thread_ids={ART}))
        checked = await stm.build_context(make_turn(
            channel_names=NameMap(names), user_names=NameMap(people), thread_ids=IdSet([ART])))
    assert checked == plain
    text = plain.memory_items[0].text
    assert f"the thread named `art` (ID: {ART})" in text and "with Bob" in text
