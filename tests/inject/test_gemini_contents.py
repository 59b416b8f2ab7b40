"""Gemini ``contents`` as plain dicts, in both spellings a host may hold them:
snake_case (the SDK's own dicts) and camelCase (the REST API's JSON). Either
way a function response is no dialogue turn and stays right after its call,
a call still waiting for its response ends the list, and a content of a
role Gemini does not have (a stray system content) is no turn either."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.inject import inject
from stm_core.models import ContextItem, StmContext

BLOCK = ContextItem(text="memory", kind="same_channel")
SPELLINGS = {"snake_case": ("function_call", "function_response"),
             "camelCase": ("functionCall", "functionResponse")}


def at_depth(depth: int) -> StmContext:
    return StmContext(memory_items=(BLOCK,), memory_injection_depth=depth)


def placed(contents: list[dict[str, Any]], depth: int) -> int:
    out = inject(contents, at_depth(depth), format="gemini")
    return next(i for i, m in enumerate(out) if getattr(m, "item", None) is BLOCK)


def text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": words}]}


def call_and_response(spelling: str) -> list[dict[str, Any]]:
    call, response = SPELLINGS[spelling]
    return [text("user", "weather?"),
            {"role": "model", "parts": [{call: {"name": "weather", "args": {}}}]},
            {"role": "user", "parts": [{response: {"name": "weather",
                                                   "response": {"sky": "sunny"}}}]}]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_function_response_is_no_turn_when_counting_depth(spelling: str) -> None:
    contents = call_and_response(spelling)
    # Two turns back from the end: the model's call, then the user's question.
    assert placed(contents, 2) == 0
    assert placed(contents, 1) == 1


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_nothing_goes_after_a_call_still_waiting_for_its_response(spelling: str) -> None:
    contents = call_and_response(spelling)[:2]
    assert placed(contents, 0) == 1


def test_a_content_of_a_role_gemini_does_not_have_is_no_turn() -> None:
    contents = [text("user", "hi"), text("system", "stray"), text("model", "hello")]
    assert placed(contents, 2) == 0


def test_contents_without_parts_are_turns_like_any_other() -> None:
    contents: list[dict[str, Any]] = [{"role": "user"}, text("model", "hello"),
                                      {"role": "user", "parts": None}]
    assert placed(contents, 2) == 1
    assert placed(contents, 0) == 3


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_responses_to_parallel_calls_in_separate_contents_stay_together(spelling: str) -> None:
    call, response = SPELLINGS[spelling]
    contents = [text("user", "weather and time?"),
                {"role": "model", "parts": [{call: {"name": "weather", "args": {}}},
                                            {call: {"name": "time", "args": {}}}]},
                {"role": "user", "parts": [{response: {"name": "weather", "response": {}}}]},
                {"role": "user", "parts": [{response: {"name": "time", "response": {}}}]}]
    out = inject(contents, at_depth(-1), format="gemini", anchor_index=3)
    assert out.index(contents[3]) == out.index(contents[2]) + 1 == out.index(contents[1]) + 2
