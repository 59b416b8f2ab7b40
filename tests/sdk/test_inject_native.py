"""``inject`` on each provider's native message list, built with the SDK's own
types, at every depth: the result goes through the SDK's request building
(offline) and the request it sends is checked against the API's rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from stm_core.errors import ValidationError
from stm_core.inject import StmMessage, find_injected, inject, strip_injected
from stm_core.models import ContextItem, StmContext
from tests.sdk.conversations import BUILDERS, SCENARIOS, call, output
from tests.sdk.rules import RULES, Body
from tests.sdk.wire import send_anthropic, send_chat, send_gemini, send_responses

OTHER = ContextItem(text="[other channels memory]", kind="other_channels")
SAME = ContextItem(text="[this channel memory]", kind="same_channel")
NUDGE = ContextItem(text="[System: refresh your memory]", kind="nudge")
SENDERS: dict[str, Callable[[list[Any]], dict[str, Any]]] = {
    "openai": send_chat, "openai-responses": send_responses,
    "anthropic": send_anthropic, "gemini": send_gemini}
FORMATS = list(BUILDERS)


def sent(fmt: str, messages: list[Any]) -> Body:
    """The list as the SDK put it on the wire."""
    key = RULES[fmt][0]
    body: Body = SENDERS[fmt](messages)[key]
    assert len(body) == len(messages)
    return body


def placeholder(fmt: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": "x"}]}
    return {"role": "user", "content": "x"}


def lowest_allowed_position(fmt: str, rest: Body, depth: int) -> int:
    """Where the API's rules and the spec put an item at ``depth``: the lowest
    position that keeps every tool call whole and has at least ``depth``
    dialogue turns below it (all of them when there are fewer)."""
    _key, whole, turn_flags = RULES[fmt]
    flags = turn_flags(rest)
    target = min(max(depth, 0), sum(flags))
    allowed = [j for j in range(len(rest) + 1)
               if whole([*rest[:j], placeholder(fmt), *rest[j:]])
               and sum(flags[j:]) >= target]
    assert allowed, "position 0 is always allowed"
    return max(allowed)


def check(fmt: str, conversation: list[Any], ctx: StmContext,
          items: list[ContextItem]) -> tuple[int, Body]:
    """Inject, send, and check what every format guarantees; returns the
    position of the first inserted item and the conversation as sent."""
    out = inject(conversation, ctx, format=fmt)  # type: ignore[call-overload]
    found = find_injected(out)
    assert [item for _, item in found] == items
    positions = [index for index, _ in found]
    assert positions == list(range(positions[0], positions[0] + len(items)))
    assert all(isinstance(out[i], StmMessage) for i in positions)
    assert [out[i].kind for i in positions] == [i.kind for i in items]
    kept = strip_injected(out)
    assert len(kept) == len(conversation)
    assert all(a is b for a, b in zip(kept, conversation, strict=True))

    body = sent(fmt, out)
    assert RULES[fmt][1](body), "a tool call was separated from its result"
    for index, item in zip(positions, items, strict=True):
        assert item.text in json.dumps(body[index])
        assert body[index].get("role") == "user"
    rest = [m for i, m in enumerate(body) if i not in positions]
    return positions[0], rest


def turn_count(fmt: str, scenario: str) -> int:
    return sum(RULES[fmt][2](sent(fmt, BUILDERS[fmt](scenario)))) if scenario != "empty" else 0


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_nudge_at_every_depth(fmt: str, scenario: str) -> None:
    for depth in range(turn_count(fmt, scenario) + 3):
        ctx = StmContext(nudge_item=NUDGE, nudge_injection_depth=depth)
        position, rest = check(fmt, BUILDERS[fmt](scenario), ctx, [NUDGE])
        assert position == lowest_allowed_position(fmt, rest, depth), depth


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_memory_block_at_every_depth_and_anchored(fmt: str, scenario: str) -> None:
    for depth in range(-1, turn_count(fmt, scenario) + 3):
        ctx = StmContext(memory_items=(OTHER, SAME), memory_injection_depth=depth)
        position, rest = check(fmt, BUILDERS[fmt](scenario), ctx, [OTHER, SAME])
        if depth >= 0:
            assert position == lowest_allowed_position(fmt, rest, depth), depth
        else:
            # Anchored: after the leading system/developer messages, or first.
            leading = 0
            while leading < len(rest) and rest[leading].get("role") in ("system", "developer"):
                leading += 1
            assert position == leading


@pytest.mark.parametrize("fmt", FORMATS)
def test_at_equal_depth_the_nudge_sits_right_below_the_block(fmt: str) -> None:
    ctx = StmContext(memory_items=(OTHER, SAME), memory_injection_depth=2,
                     nudge_item=NUDGE, nudge_injection_depth=2)
    position, rest = check(fmt, BUILDERS[fmt]("parallel"), ctx, [OTHER, SAME, NUDGE])
    assert position == lowest_allowed_position(fmt, rest, 2)


def test_worked_example_anthropic_results_stay_after_their_tool_use() -> None:
    conversation = BUILDERS["anthropic"]("parallel")
    # Depth 2 points at the user message that starts with the tool results:
    # the nudge moves above the assistant's tool_use message instead.
    out = inject(conversation, StmContext(nudge_item=NUDGE, nudge_injection_depth=2),
                 format="anthropic")
    assert out[3] == {"role": "user", "content": NUDGE.text}
    assert out[4] is conversation[3] and out[5] is conversation[4]


def test_worked_example_responses_reasoning_and_calls_stay_together() -> None:
    conversation = BUILDERS["openai-responses"]("pending")
    out = inject(conversation, StmContext(nudge_item=NUDGE, nudge_injection_depth=0),
                 format="openai-responses")
    # The calls wait for their outputs: the nudge goes above the reasoning item.
    assert out[4] == {"type": "message", "role": "user", "content": NUDGE.text}
    assert out[5:] == conversation[4:]


def test_worked_example_gemini_short_dialogue_clamps_to_the_first_turn() -> None:
    conversation = BUILDERS["gemini"]("short")
    out = inject(conversation, StmContext(nudge_item=NUDGE, nudge_injection_depth=9),
                 format="gemini")
    assert out == [{"role": "user", "parts": [{"text": NUDGE.text}]}, conversation[0]]


@pytest.mark.parametrize(("arguments", "field"), [
    ({"format": "claude"}, "format"),
    ({"format": None}, "format"),
    ({"format": "gemini", "as_dicts": False}, "as_dicts"),
    ({"anchor_index": "0"}, "anchor_index"),
    ({"anchor_index": True}, "anchor_index"),
])
def test_hostile_arguments_are_validation_errors(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        inject([], StmContext(nudge_item=NUDGE), **arguments)
    assert caught.value.field == field


@pytest.mark.parametrize(("messages", "ctx", "field"), [
    ("hello", StmContext(), "messages"),
    (None, StmContext(), "messages"),
    ([], {"nudge_item": NUDGE}, "ctx"),
])
def test_wrong_types_are_validation_errors(messages: Any, ctx: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        inject(messages, ctx)
    assert caught.value.field == field


def test_worked_example_responses_each_round_of_calls_is_a_turn() -> None:
    conversation = [{"role": "user", "content": "plan my day"}, call("c1"), output("c1"),
                    call("c2"), call("c3"), output("c2"), output("c3"),
                    {"role": "assistant", "content": "Done."}]
    out = inject(conversation, StmContext(nudge_item=NUDGE, nudge_injection_depth=2),
                 format="openai-responses")
    # Turns from the end: the answer, then the second round of (parallel) calls.
    assert find_injected(out) == [(3, NUDGE)]
    assert out[4] is conversation[3]
    body = sent("openai-responses", out)
    assert RULES["openai-responses"][1](body)
