"""``inject`` and the depth helpers follow the rules of the format they are
given (not the Chat Completions ones), and refuse bad arguments with a
:class:`ValidationError` that names the argument and what it accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stm_core.errors import ValidationError
from stm_core.inject import dialogue_insertion_index, inject, insert_at_dialogue_depth
from stm_core.models import ContextItem, StmContext

BLOCK = (ContextItem(text="memory", kind="same_channel"),)
NUDGE = ContextItem(text="nudge", kind="nudge")

# Gemini's reply role is "model", which the Chat Completions rule does not count.
GEMINI = [{"role": "user", "parts": [{"text": "hi"}]},
          {"role": "model", "parts": [{"text": "hello"}]}]
# Chat Completions: a tool call, its result, then a user turn.
TOOL_GROUP: list[dict[str, Any]] = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "user", "content": "thanks"},
]


def at_depth(depth: int) -> StmContext:
    return StmContext(memory_items=BLOCK, memory_injection_depth=depth)


def block_index(out: list[Any]) -> int:
    return next(i for i, m in enumerate(out) if getattr(m, "item", None) is BLOCK[0])


def test_depth_counts_the_turns_of_the_given_format() -> None:
    out = inject(GEMINI, at_depth(1), format="gemini")
    assert block_index(out) == 1  # before the model's reply, a turn in Gemini
    assert dialogue_insertion_index(GEMINI, 1, format="gemini") == 1
    assert insert_at_dialogue_depth(GEMINI, "x", 1, format="gemini")[1] == "x"


def test_the_anchored_default_skips_only_the_formats_own_preamble() -> None:
    # Anthropic takes its system prompt apart from the list: nothing in the
    # list is a preamble, so the anchored block goes first.
    messages = [{"role": "system", "content": "stray"}, {"role": "user", "content": "hi"}]
    assert block_index(inject(messages, at_depth(-1), format="anthropic")) == 0
    assert block_index(inject(messages, at_depth(-1))) == 1


def test_an_anchor_after_a_responses_function_call_moves_above_it() -> None:
    items = [{"type": "message", "role": "user", "content": "weather?"},
             {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]
    out = inject(items, at_depth(-1), format="openai-responses", anchor_index=2)
    assert block_index(out) == 1


ANTHROPIC_TOOL_ROUND: list[dict[str, Any]] = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather",
                                       "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "sunny"}]},
    {"role": "assistant", "content": "Sunny."},
]


def test_an_anchor_before_an_anthropic_tool_result_moves_above_its_tool_use() -> None:
    out = inject(ANTHROPIC_TOOL_ROUND, at_depth(-1), format="anthropic", anchor_index=2)
    assert block_index(out) == 1


def test_nothing_goes_between_two_anthropic_tool_result_messages() -> None:
    # The API merges consecutive user messages: both results answer the tool_use.
    second = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                           "content": "windy"}]}
    messages = [*ANTHROPIC_TOOL_ROUND[:3], second, ANTHROPIC_TOOL_ROUND[3]]
    out = inject(messages, at_depth(-1), format="anthropic", anchor_index=3)
    assert block_index(out) == 1
    # A plain user message is no result: the block may go right before it.
    plain = [*ANTHROPIC_TOOL_ROUND, {"role": "user", "content": "thanks"}]
    assert block_index(inject(plain, at_depth(-1), format="anthropic", anchor_index=4)) == 4


def test_an_anthropic_tool_result_message_is_not_a_turn_but_other_user_messages_are() -> None:
    # From the end: "Sunny." (1), the tool_use (2); the tool_result is skipped.
    assert dialogue_insertion_index(ANTHROPIC_TOOL_ROUND, 2, format="anthropic") == 1
    assert dialogue_insertion_index(ANTHROPIC_TOOL_ROUND, 3, format="anthropic") == 0


def test_a_message_of_another_role_is_not_an_anthropic_turn() -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "system", "content": "stray"}, {"role": "user", "content": "c"}]
    assert block_index(inject(messages, at_depth(2), format="anthropic")) == 1


def responses_call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def responses_output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def test_nothing_goes_between_two_responses_outputs() -> None:
    items = [{"type": "message", "role": "user", "content": "go"}, responses_call("a"),
             responses_call("b"), responses_output("a"), responses_output("b")]
    out = inject(items, at_depth(-1), format="openai-responses", anchor_index=4)
    assert block_index(out) == 1


def test_responses_turns_count_a_round_of_calls_once_and_skip_reasoning() -> None:
    user = {"type": "message", "role": "user", "content": "go"}
    reasoning = {"type": "reasoning", "id": "r1", "summary": []}
    items = [user, reasoning, responses_call("a"), responses_call("b"), responses_output("a"),
             responses_output("b"), reasoning, responses_call("c"), responses_output("c")]
    # From the end: call c (1: made after seeing outputs, reasoning skipped),
    # the round a+b (2: b follows a, counted once), the user (3).
    assert dialogue_insertion_index(items, 1, format="openai-responses") == 6
    assert dialogue_insertion_index(items, 2, format="openai-responses") == 1
    assert dialogue_insertion_index(items, 3, format="openai-responses") == 0
    # Reasoning between two calls of one round does not make the second a turn.
    round_with_reasoning = [user, responses_call("a"), reasoning, responses_call("b"),
                            responses_output("a"), responses_output("b")]
    assert dialogue_insertion_index(round_with_reasoning, 2, format="openai-responses") == 0
    # A call first in the list is a turn of its own.
    assert dialogue_insertion_index([responses_call("z"), responses_output("z")], 1,
                                    format="openai-responses") == 0


def test_the_depth_helpers_keep_tool_calls_together_unless_told_not_to() -> None:
    # Depth 2 lands on the assistant's call: the default moves it above the call.
    assert dialogue_insertion_index(TOOL_GROUP, 2) == 1
    assert insert_at_dialogue_depth(TOOL_GROUP, "x", 2).index("x") == 1
    # Every item a turn: depth 2 is the tool result, which protection lifts.
    assert dialogue_insertion_index(TOOL_GROUP, 2, is_dialogue=lambda m: True) == 1
    assert dialogue_insertion_index(TOOL_GROUP, 2, is_dialogue=lambda m: True,
                                    protect_tool_calls=False) == 2

    def is_user(m: object) -> bool:
        return isinstance(m, dict) and m.get("role") == "user"
    # Users only: the first user message is the 2nd turn from the end.
    assert dialogue_insertion_index(TOOL_GROUP, 2, is_dialogue=is_user) == 0
    assert insert_at_dialogue_depth(TOOL_GROUP, "x", 2, is_dialogue=is_user).index("x") == 0
    assert insert_at_dialogue_depth(TOOL_GROUP, "x", 2, is_dialogue=lambda m: True).index("x") == 1
    assert insert_at_dialogue_depth(TOOL_GROUP, "x", 2, is_dialogue=lambda m: True,
                                    protect_tool_calls=False).index("x") == 2


def test_a_custom_dialogue_rule_also_places_the_block() -> None:
    out = inject(TOOL_GROUP, at_depth(2), is_dialogue=lambda m: m["role"] == "user")
    assert block_index(out) == 0


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic", "gemini"])
def test_as_dicts_false_is_refused_outside_the_openai_format(fmt: Any) -> None:
    with pytest.raises(ValidationError, match=f"'openai' format only, not '{fmt}'") as info:
        inject([], at_depth(0), format=fmt, as_dicts=False)
    assert (info.value.field, info.value.allowed) == ("as_dicts", "True or None")
    assert len(inject([], at_depth(0), format=fmt, as_dicts=True)) == 1
    assert len(inject([], at_depth(0), format=fmt)) == 1


@pytest.mark.parametrize("messages", ["text", b"bytes", None, 3, {"role": "user"}])
def test_messages_that_are_not_a_list_are_refused(messages: Any) -> None:
    with pytest.raises(ValidationError, match=f"not {type(messages).__name__}$") as info:
        inject(messages, at_depth(0))
    assert (info.value.field, info.value.allowed) == ("messages", "a list or tuple")


@pytest.mark.parametrize("ctx", [None, {}, "ctx"])
def test_a_context_that_is_not_an_stm_context_is_refused(ctx: Any) -> None:
    with pytest.raises(ValidationError, match=f"not {type(ctx).__name__}$") as info:
        inject([], ctx)
    assert (info.value.field, info.value.allowed) == ("ctx", "StmContext")


@pytest.mark.parametrize("anchor", [True, False, "1", 1.0])
def test_an_anchor_index_that_is_not_an_int_is_refused(anchor: Any) -> None:
    with pytest.raises(ValidationError, match=f"not {anchor!r}$") as info:
        inject([], at_depth(-1), anchor_index=anchor)
    assert (info.value.field, info.value.allowed) == ("anchor_index", "an int or None")


def test_the_nudge_depth_counts_the_turns_of_the_given_format() -> None:
    out = inject(GEMINI, StmContext(nudge_item=NUDGE, nudge_injection_depth=1), format="gemini")
    assert [getattr(m, "item", None) for m in out] == [None, NUDGE, None]


@pytest.mark.parametrize("fmt", ["chat", "OPENAI", "", None, ["openai"], 1])
def test_an_unknown_format_is_refused_with_the_known_ones(fmt: Any) -> None:
    expected = re.escape(f"unknown message format {fmt!r}; one of: ")
    with pytest.raises(ValidationError, match=expected) as info:
        inject([], at_depth(0), format=fmt)
    assert info.value.field == "format"
    assert info.value.allowed == "openai, openai-responses, anthropic, gemini"


def test_a_legacy_function_call_and_its_function_result_stay_together() -> None:
    """The ``function_call``/``role: function`` pair of the legacy OpenAI
    function calling is one group, as a tool call and its results are."""
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None,
                 "function_call": {"name": "weather", "arguments": "{}"}},
                {"role": "function", "name": "weather", "content": "sunny"}]
    assert block_index(inject(messages, at_depth(-1), anchor_index=2)) == 1
    assert block_index(inject(messages, at_depth(-1), anchor_index=3)) == 3
    assert block_index(inject(messages, at_depth(0))) == 3


def test_nothing_goes_after_a_legacy_function_call_still_waiting_for_its_result() -> None:
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None,
                 "function_call": {"name": "weather", "arguments": "{}"}}]
    assert block_index(inject(messages, at_depth(0))) == 1


def test_a_chat_message_of_an_item_carries_its_tag_only_when_asked() -> None:
    from stm_core.inject import as_message
    from stm_core.models import STM_TAG

    assert as_message(BLOCK[0]) == {"role": "user", "content": "memory"}
    assert as_message(BLOCK[0], keep_tags=True) == {"role": "user", "content": "memory",
                                                    "tag": STM_TAG}


def test_the_very_start_never_splits_a_tool_call() -> None:
    from stm_core.inject import splits_tool_call

    ends_with_a_call = TOOL_GROUP[:2]
    assert not splits_tool_call(ends_with_a_call, 0)
    assert splits_tool_call(ends_with_a_call, 2)
    assert splits_tool_call(TOOL_GROUP, 2) and not splits_tool_call(TOOL_GROUP, 3)
