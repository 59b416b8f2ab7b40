"""The dialogue-depth walk, in any message format (reference §5).

Depth counts dialogue turns from the bottom: ``0`` is the tail, ``1`` sits
before the last turn, ``N`` before the N-th turn from the end, clamped to the
earliest turn when fewer exist. A position that would separate a tool call
from its result (DESIGN decision 12) moves up, before the call, so the item is
never closer to the end than its depth asks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stm_core.inject.base import MessageFormat
from stm_core.inject.chat import CHAT


def splits_tool_call(items: Sequence[object], index: int,
                     fmt: MessageFormat = CHAT) -> bool:
    """Whether inserting before ``items[index]`` would separate a tool call
    from its results (or results from each other)."""
    if index < len(items) and fmt.is_result(items[index]):
        return True
    return index > 0 and fmt.awaits_result(items[index - 1])


def keep_tool_calls_together(items: Sequence[object], index: int,
                             fmt: MessageFormat = CHAT) -> int:
    """Move ``index`` up until it no longer splits a tool-call group."""
    while index > 0 and splits_tool_call(items, index, fmt):
        index -= 1
    return index


def depth_index(items: Sequence[object], depth: int,
                is_turn_at: Callable[[Sequence[object], int], bool]) -> int:
    """The index before the ``depth``-th dialogue turn from the end (the
    earliest one when fewer exist); the end for ``depth <= 0`` or no turn.
    Walks from the end and stops at the depth."""
    index = len(items)
    if depth > 0:
        counted = 0
        for position in range(len(items) - 1, -1, -1):
            if is_turn_at(items, position):
                counted += 1
                index = position
                if counted == depth:
                    break
    return index


def insertion_index(items: Sequence[object], depth: int, fmt: MessageFormat = CHAT, *,
                    is_dialogue: Callable[[object], bool] | None = None,
                    protect_tool_calls: bool = True) -> int:
    """The index before which an item at dialogue ``depth`` goes."""
    is_turn_at = (fmt.is_turn_at if is_dialogue is None
                  else lambda items, position: is_dialogue(items[position]))
    index = depth_index(items, depth, is_turn_at)
    return keep_tool_calls_together(items, index, fmt) if protect_tool_calls else index


def anchored_index(messages: Sequence[object], fmt: MessageFormat = CHAT) -> int:
    """Where an anchored memory block goes by default: right after the leading
    system messages, so above example dialogues and the history."""
    index = 0
    while index < len(messages) and fmt.is_preamble(messages[index]):
        index += 1
    return index
