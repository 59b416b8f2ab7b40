"""Anthropic Messages.

Every ``user`` and ``assistant`` message is a dialogue turn, except a user
message that only carries ``tool_result`` blocks (the answer to the previous
assistant message's ``tool_use`` blocks, which must come right after it). The
system prompt is a separate request field, so an anchored block goes first.
"""

from __future__ import annotations

from typing import Any

from stm_core.inject.base import MessageFormat, each_turn, field, parts_of
from stm_core.inject.chat import DIALOGUE_ROLES
from stm_core.models import ContextItem


def block_types(message: object) -> list[object]:
    return [field(block, "type") for block in parts_of(message, "content")]


def is_tool_result(message: object) -> bool:
    return field(message, "role") == "user" and "tool_result" in block_types(message)


def uses_tools(message: object) -> bool:
    return field(message, "role") == "assistant" and "tool_use" in block_types(message)


def is_turn(message: object) -> bool:
    if field(message, "role") not in DIALOGUE_ROLES:
        return False
    kinds = block_types(message)
    return not kinds or any(kind != "tool_result" for kind in kinds)


def as_user_message(item: ContextItem) -> dict[str, Any]:
    return {"role": "user", "content": item.text}


ANTHROPIC = MessageFormat(
    key="anthropic",
    is_turn_at=each_turn(is_turn),
    is_result=is_tool_result,
    awaits_result=uses_tools,
    is_preamble=lambda message: False,
    message=as_user_message,
)
