"""Frozen attrs objects made without their ``__init__`` are the objects the
class makes, and classes whose ``__init__`` does more are refused."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stm_core._util.fast_attrs import check_plain, unchecked_maker
from stm_core.models import CrudeMessage, crude_line
from stm_core.plugin_types import VisibilityContext
from stm_core.storage.records import CaptureWrite, MemoryKey, MemoryRecord

TEXT = st.text(max_size=20)
MAYBE = st.none() | TEXT
NUMBER = st.integers(-(2**63), 2**63 - 1)
KEYS = st.builds(MemoryKey.server, TEXT, TEXT, MAYBE)
LINES = st.builds(crude_line, st.sampled_from(["user", "model"]), TEXT, MAYBE, NUMBER, MAYBE)


def same_object(made: object, built: object) -> None:
    assert type(made) is type(built)
    assert made == built
    assert attrs.asdict(made, recurse=False) == attrs.asdict(built, recurse=False)


RECORD_FIELDS = st.fixed_dictionaries({
    "key": KEYS, "parent_channel_id": MAYBE, "persona_lineage_id": MAYBE, "summary": MAYBE,
    "categories": st.dictionaries(TEXT, TEXT), "messages": st.lists(LINES, max_size=3).map(tuple),
    "turns_since_refresh": NUMBER, "last_refreshed_turn": NUMBER, "updated_at_ms": NUMBER,
    "rev": NUMBER})


@given(RECORD_FIELDS)
def test_a_record_is_the_one_the_class_makes(fields: dict[str, Any]) -> None:
    same_object(unchecked_maker(MemoryRecord)(**fields), MemoryRecord(**fields))


@given(KEYS, st.lists(LINES, max_size=3), NUMBER)
def test_plain_defaults_apply_as_in_the_class(key: MemoryKey, lines: list[CrudeMessage],
                                              now: int) -> None:
    made = unchecked_maker(CaptureWrite)(key=key, messages=tuple(lines), now_ms=now)
    same_object(made, CaptureWrite(key=key, messages=tuple(lines), now_ms=now))


def test_a_stored_line_is_the_one_the_class_makes() -> None:
    same_object(crude_line("user", "hi", None, 5),
                CrudeMessage(role="user", content="hi", speaker_name=None, timestamp_ms=5))


def test_made_objects_stay_frozen_and_hashable() -> None:
    line = crude_line("model", "x", "Ann", 1, "42")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        line.content = "y"  # type: ignore[misc]
    assert hash(line) == hash(CrudeMessage(role="model", content="x", speaker_name="Ann",
                                           timestamp_ms=1, author_id="42"))


def test_a_factory_default_must_be_given_and_unknown_fields_are_refused() -> None:
    make = unchecked_maker(MemoryRecord)
    key = MemoryKey.server("9", "1", None)
    with pytest.raises(TypeError, match="categories"):
        make(key=key)
    with pytest.raises(TypeError, match="colour"):
        unchecked_maker(CaptureWrite)(key=key, messages=(), now_ms=1, colour="red")


@attrs.frozen
class RequiredAfterDefault:
    first: int = 1
    second: int = attrs.field(factory=int)


def test_by_position_only_when_the_field_order_allows_it() -> None:
    unchecked_maker(RequiredAfterDefault)  # by keyword: fine
    with pytest.raises(TypeError, match="by position"):
        unchecked_maker(RequiredAfterDefault, positional=True)
    make = unchecked_maker(CaptureWrite, positional=True)
    key = MemoryKey.server("9", "1", None)
    same_object(make(key, (), 5), CaptureWrite(key=key, messages=(), now_ms=5))


@attrs.frozen
class Checked:
    size: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class Converted:
    size: int = attrs.field(converter=int)


@attrs.frozen(cache_hash=True)
class HashCached:
    size: int


@attrs.frozen
class AfterInit:
    size: int

    def __attrs_post_init__(self) -> None:
        pass


@attrs.frozen(slots=False)
class WithDict:
    size: int


class NotAttrs:
    __slots__ = ("size",)


@pytest.mark.parametrize("cls", [Checked, Converted, HashCached, AfterInit, WithDict, NotAttrs])
def test_classes_whose_init_does_more_are_refused(cls: type) -> None:
    with pytest.raises(TypeError):
        unchecked_maker(cls)


def test_the_classes_made_on_the_turn_path_check_nothing_on_init() -> None:
    for cls in (CrudeMessage, MemoryRecord, CaptureWrite, VisibilityContext):
        check_plain(cls)
