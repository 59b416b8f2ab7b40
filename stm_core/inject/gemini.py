"""Google Gemini ``contents`` (dicts or ``google.genai.types.Content`` objects).

Every ``user`` and ``model`` content is a dialogue turn (a content without a
role is the user's), except one that only carries ``function_response`` parts:
it answers the previous content's ``function_call`` parts and must come right
after it. The system instruction is a separate field, so an anchored block goes
first.
"""

from __future__ import annotations

from typing import Any

from stm_core.inject.base import MessageFormat, each_turn, field, parts_of
from stm_core.models import ContextItem

ROLES = frozenset({"user", "model", None})


def has_part(content: object, snake: str, camel: str) -> bool:
    """Whether any part carries ``snake`` (SDK objects, snake_case dicts) or
    ``camel`` (REST-style camelCase dicts)."""
    return any(field(part, snake) is not None or field(part, camel) is not None
               for part in parts_of(content, "parts"))


def calls_functions(content: object) -> bool:
    return has_part(content, "function_call", "functionCall")


def answers_functions(content: object) -> bool:
    return has_part(content, "function_response", "functionResponse")


def is_turn(content: object) -> bool:
    if field(content, "role") not in ROLES:
        return False
    parts = parts_of(content, "parts")
    only_answers = bool(parts) and all(
        field(p, "function_response") is not None or field(p, "functionResponse") is not None
        for p in parts)
    return not only_answers


def as_user_content(item: ContextItem) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": item.text}]}


GEMINI = MessageFormat(
    key="gemini",
    is_turn_at=each_turn(is_turn),
    is_result=answers_functions,
    awaits_result=calls_functions,
    is_preamble=lambda content: False,
    message=as_user_content,
)
