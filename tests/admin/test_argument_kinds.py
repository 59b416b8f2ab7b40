"""What ``checked_arguments`` checks, read off the annotations alone.

The admin methods check most values again themselves, so their own tests
cannot tell whether the decorator did its part. Here a small class has one
parameter of every annotated kind and checks nothing itself: every refusal
below comes from the decorator, and every accepted value arrives converted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from stm_core.admin.argument_types import checked_arguments
from stm_core.errors import ValidationError

NO_TAGS: Mapping[str, str] = MappingProxyType({})


@checked_arguments
class Calls:
    async def ids(self, server_id: str, *, channel_ids: Iterable[str] = (),
                  persona_id: str | None = None) -> dict[str, Any]:
        return {"server_id": server_id, "channel_ids": channel_ids, "persona_id": persona_id}

    async def texts(self, text: str, *, names: Iterable[str] = (),
                    note: str | None = None, lines: str | Iterable[str] = "",
                    maybe_lines: str | Iterable[str] | None = None,
                    labels: Mapping[str, str] | None = None,
                    tags: Mapping[str, str] = NO_TAGS) -> dict[str, Any]:
        return {"text": text, "names": names, "note": note, "lines": lines,
                "maybe_lines": maybe_lines, "labels": labels, "tags": tags}

    async def numbers(self, *, count: int = 0, flag: bool = False,
                      maybe_count: int | None = None, doc: object = None,
                      either: int | str | None = None,
                      sizes: Iterable[int] = ()) -> dict[str, Any]:
        # ``either`` and ``sizes`` are of no checked kind: the method would check them.
        return {"count": count, "flag": flag, "maybe_count": maybe_count, "doc": doc,
                "either": either, "sizes": sizes}

    async def _private(self, value: str) -> object:
        return value

    def plain(self, value: str) -> object:
        return value


async def test_id_arguments_become_strings_and_id_lists_sorted_sets() -> None:
    got = await Calls().ids(1234, channel_ids=[3, "1", 3], persona_id=7)  # type: ignore[arg-type]

    assert got == {"server_id": "1234", "channel_ids": ["1", "3"], "persona_id": "7"}


async def test_none_is_allowed_exactly_where_the_annotation_allows_it() -> None:
    assert (await Calls().ids("g", persona_id=None))["persona_id"] is None
    assert (await Calls().texts("t", note=None, maybe_lines=None, labels=None))["note"] is None
    assert (await Calls().numbers(maybe_count=None))["maybe_count"] is None
    for call in (Calls().ids(None),  # type: ignore[arg-type]
                 Calls().texts(None),  # type: ignore[arg-type]
                 Calls().texts("t", lines=None),  # type: ignore[arg-type]
                 Calls().texts("t", names=None),  # type: ignore[arg-type]
                 Calls().texts("t", tags=None),  # type: ignore[arg-type]
                 Calls().numbers(count=None),  # type: ignore[arg-type]
                 Calls().numbers(flag=None)):  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            await call


@pytest.mark.parametrize(("method", "kwargs", "field"), [
    ("ids", {"server_id": ["g"]}, "server_id"),
    ("ids", {"server_id": "g", "channel_ids": "c1"}, "channel_ids"),
    ("ids", {"server_id": "g", "persona_id": ["p"]}, "persona_id"),
    ("ids", {"server_id": "g", "persona_id": 1.5}, "persona_id"),
    ("texts", {"text": 5}, "text"),
    ("texts", {"text": "t", "names": "one"}, "names"),
    ("texts", {"text": "t", "names": ["a", 2]}, "names item"),
    ("texts", {"text": "t", "note": 3}, "note"),
    ("texts", {"text": "t", "lines": 3}, "lines"),
    ("texts", {"text": "t", "lines": {"a": "b"}}, "lines"),
    ("texts", {"text": "t", "maybe_lines": b"x"}, "maybe_lines"),
    ("texts", {"text": "t", "labels": {"a": 1}}, "labels['a']"),
    ("texts", {"text": "t", "labels": ["a"]}, "labels"),
    ("numbers", {"count": "3"}, "count"),
    ("numbers", {"count": True}, "count"),
    ("numbers", {"flag": 1}, "flag"),
    ("numbers", {"maybe_count": "1"}, "maybe_count"),
])
async def test_a_wrong_type_is_refused_naming_the_argument(method: str, kwargs: dict[str, Any],
                                                           field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        await getattr(Calls(), method)(**kwargs)

    assert caught.value.field == field


async def test_right_values_arrive_as_given_or_as_lists() -> None:
    got = await Calls().texts("t", names=("a", "b"), note="n", lines=("x", "y"),
                              maybe_lines="z", labels={"k": "v"})

    assert got == {"text": "t", "names": ["a", "b"], "note": "n", "lines": ["x", "y"],
                   "maybe_lines": "z", "labels": {"k": "v"}, "tags": {}}
    assert (await Calls().texts("t", lines="one line"))["lines"] == "one line"
    assert await Calls().numbers(count=3, flag=True, doc=[1]) == {
        "count": 3, "flag": True, "maybe_count": None, "doc": [1], "either": None, "sizes": ()}


async def test_annotations_of_no_checked_kind_are_left_to_the_method() -> None:
    got = await Calls().numbers(either=5, sizes=[1, 2])

    assert (got["either"], got["sizes"]) == (5, [1, 2])


async def test_a_call_of_the_wrong_shape_is_a_type_error_before_any_check() -> None:
    with pytest.raises(TypeError):
        await Calls().ids("g", "positional")  # type: ignore[misc]
    with pytest.raises(TypeError):
        await Calls().ids("g", no_such=1)  # type: ignore[call-arg]


async def test_only_public_coroutine_methods_are_wrapped_and_keep_their_names() -> None:
    assert Calls.ids.__name__ == "ids" and Calls.ids.__wrapped__  # type: ignore[attr-defined]
    assert await Calls()._private(5) == 5  # type: ignore[arg-type]
    assert Calls().plain(5) == 5  # type: ignore[arg-type]
