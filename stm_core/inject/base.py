"""What :func:`stm_core.inject.inject` needs to know about one native message format."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from stm_core.models import ContextItem


def field(item: object, name: str) -> Any:
    """A key of a message dict, or an attribute of an SDK object (pydantic models)."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def parts_of(item: object, name: str) -> Sequence[object]:
    """A list-valued field (content blocks, parts), or ``()`` when it is a plain
    string or absent."""
    value = field(item, name)
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


TurnAt = Callable[[Sequence[object], int], bool]


def each_turn(is_turn: Callable[[object], bool]) -> TurnAt:
    """The turn rule of a format whose items count one by one."""
    return lambda items, index: is_turn(items[index])


@attrs.frozen(kw_only=True)
class MessageFormat:
    """A provider's message list, as far as placing an item in it goes.

    ``is_turn_at(items, index)``: ``items[index]`` counts as one dialogue turn
    for depth (asked from the end of the list, only as far as the depth goes).
    ``is_result(item)``: the item answers a tool call and must stay right after
    what precedes it. ``awaits_result(item)``: the item is (or ends with) a tool
    call, or a reasoning item, that nothing may follow before its result.
    ``is_preamble(item)``: a leading system item the anchored block goes after.
    ``message(item)``: the body of the message that carries one of our items.
    """

    key: str
    is_turn_at: TurnAt
    is_result: Callable[[object], bool]
    awaits_result: Callable[[object], bool]
    is_preamble: Callable[[object], bool]
    message: Callable[[ContextItem], dict[str, Any]]
