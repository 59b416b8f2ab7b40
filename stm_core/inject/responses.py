"""OpenAI Responses input items.

A ``user`` or ``assistant`` message item is a dialogue turn, and so is each
run of tool calls the model made (``function_call``, ``custom_tool_call``, ...:
the model's turn when it answered with calls only; parallel calls count once). Call outputs
(``*_call_output``) stay right after their calls, and a ``reasoning`` item
right before what it reasoned about.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stm_core.inject.base import MessageFormat, field
from stm_core.inject.chat import DIALOGUE_ROLES, PREAMBLE_ROLES
from stm_core.models import ContextItem


def is_message(item: object) -> bool:
    return field(item, "type") in (None, "message")


def is_call(item: object) -> bool:
    """A client-side tool call: it has a ``call_id`` its output will answer."""
    kind = field(item, "type")
    return isinstance(kind, str) and kind.endswith("_call") and bool(field(item, "call_id"))


def is_output(item: object) -> bool:
    kind = field(item, "type")
    return isinstance(kind, str) and kind.endswith("_call_output")


def awaits_result(item: object) -> bool:
    return is_call(item) or field(item, "type") == "reasoning"


def is_turn_at(items: Sequence[object], index: int) -> bool:
    item = items[index]
    if is_message(item):
        return field(item, "role") in DIALOGUE_ROLES
    if not is_call(item):
        return False
    # One model turn per round of calls: parallel calls count once; a call
    # made after seeing an output is the model's next turn. Reasoning items
    # are skipped when looking back.
    for position in range(index - 1, -1, -1):
        if field(items[position], "type") != "reasoning":
            return not is_call(items[position])
    return True


def as_input_message(item: ContextItem) -> dict[str, Any]:
    return {"type": "message", "role": item.role, "content": item.text}


RESPONSES = MessageFormat(
    key="openai-responses",
    is_turn_at=is_turn_at,
    is_result=is_output,
    awaits_result=awaits_result,
    is_preamble=lambda item: is_message(item) and field(item, "role") in PREAMBLE_ROLES,
    message=as_input_message,
)
