"""Find stm's items again in a message list after :func:`~stm_core.inject.inject`.

Injected messages are :class:`StmMessage` objects: plain dicts to every SDK and
to JSON (nothing extra goes on the wire), which also remember the
:class:`~stm_core.models.ContextItem` they carry, so a host can tell the memory
block from the nudge, or drop both before storing its history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar, cast

from stm_core.models import STM_TAG, ContextItem, ItemKind

M = TypeVar("M")


class StmMessage(dict[str, Any]):
    """A message dict stm inserted. ``item`` is what it carries."""

    def __init__(self, body: dict[str, Any], item: ContextItem) -> None:
        super().__init__(body)
        self.item = item

    @property
    def kind(self) -> ItemKind:
        """``"other_channels"``, ``"same_channel"`` (the memory block) or ``"nudge"``."""
        return self.item.kind

    @property
    def is_nudge(self) -> bool:
        return self.item.kind == "nudge"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles and deep copies stay StmMessages.
        return (StmMessage, (dict(self), self.item))


def injected_item(message: object) -> ContextItem | None:
    """The item stm inserted as ``message``, or ``None`` for the host's own."""
    if isinstance(message, StmMessage):
        return message.item
    if isinstance(message, ContextItem) and message.tag == STM_TAG:
        return message
    return None


def find_injected(messages: Iterable[object]) -> list[tuple[int, ContextItem]]:
    """``(index, item)`` of every item stm inserted, in list order."""
    return [(index, item) for index, message in enumerate(messages)
            if (item := injected_item(message)) is not None]


def strip_injected(messages: Sequence[M | StmMessage | ContextItem]) -> list[M]:
    """The list without the items stm inserted (e.g. before storing the dialogue)."""
    return cast("list[M]", [m for m in messages if injected_item(m) is None])
