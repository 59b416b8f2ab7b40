"""OpenAI Chat Completions messages (and tagged objects such as our
:class:`~stm_core.models.ContextItem`).

A ``user`` or ``assistant`` message is a dialogue turn, an assistant message
that only calls tools included; ``system``, ``developer`` and ``tool`` messages
are not. A dict carrying a ``"tag"`` key, or an object with a ``tag`` attribute,
is judged by the tag alone (``"DIALOGUE_HISTORY"`` counts).
"""

from __future__ import annotations

from typing import Any

from stm_core.inject.base import MessageFormat, each_turn, field
from stm_core.models import DIALOGUE_HISTORY, ContextItem

#: Chat roles that count as dialogue turns when a message dict carries no tag.
DIALOGUE_ROLES = frozenset({"user", "assistant"})
#: Leading roles an anchored block goes after.
PREAMBLE_ROLES = frozenset({"system", "developer"})


def is_dialogue_turn(item: object) -> bool:
    """Whether ``item`` counts as one dialogue turn for depth.

    A tag decides when present; an untagged message (a dict, or an SDK object
    such as the ``ChatCompletionMessage`` a reply came back as) counts when its
    role is ``user`` or ``assistant``.
    """
    tag = field(item, "tag")
    if tag is not None:
        return bool(tag == DIALOGUE_HISTORY)
    return field(item, "role") in DIALOGUE_ROLES


def is_tool_result(item: object) -> bool:
    # "function" is the role of the legacy function-calling results.
    return field(item, "role") in ("tool", "function")


def calls_tools(item: object) -> bool:
    return field(item, "role") == "assistant" and bool(
        field(item, "tool_calls") or field(item, "function_call"))


def as_message(item: ContextItem, *, keep_tags: bool = False) -> dict[str, Any]:
    """One of our items as a chat-message dict (``role`` is always ``user``)."""
    message: dict[str, Any] = {"role": item.role, "content": item.text}
    if keep_tags:
        message["tag"] = item.tag
    return message


CHAT = MessageFormat(
    key="openai",
    is_turn_at=each_turn(is_dialogue_turn),
    is_result=is_tool_result,
    awaits_result=calls_tools,
    is_preamble=lambda item: field(item, "role") in PREAMBLE_ROLES,
    message=as_message,
)
