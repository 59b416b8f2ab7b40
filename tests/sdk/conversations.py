"""Conversations in each provider's native format, built with the SDKs' own
types the way a host gets them (reply objects appended as they came back)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from anthropic.types import TextBlock, ToolUseBlock
from google.genai import types as g
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall
from openai.types.responses import ResponseFunctionToolCall, ResponseReasoningItem

Builder = Callable[[], list[Any]]
# Each scenario: a user/assistant exchange, a tool pair, parallel calls, a call
# whose results are pending at the tail, a dialogue shorter than most depths.
SCENARIOS = ("plain", "tool_pair", "parallel", "pending", "short", "empty")


# -- OpenAI Chat Completions ---------------------------------------------------
def chat_calls(*ids: str) -> ChatCompletionMessage:
    return ChatCompletionMessage(role="assistant", content=None, tool_calls=[
        ChatCompletionMessageFunctionToolCall(
            id=i, type="function", function={"name": "weather", "arguments": "{}"})
        for i in ids])


def chat(scenario: str) -> list[Any]:
    system = {"role": "system", "content": "You are Tomori."}
    opening = [system, {"role": "user", "content": "hi"},
               ChatCompletionMessage(role="assistant", content="hello")]
    ask = {"role": "user", "content": "weather?"}
    done = [{"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "thanks"}]
    return {
        "plain": lambda: [*opening, ask, {"role": "assistant", "content": "Sunny."}],
        "tool_pair": lambda: [*opening, ask, chat_calls("c1"),
                              {"role": "tool", "tool_call_id": "c1", "content": "sun"}, *done],
        "parallel": lambda: [*opening, ask, chat_calls("c1", "c2"),
                             {"role": "tool", "tool_call_id": "c1", "content": "sun"},
                             {"role": "tool", "tool_call_id": "c2", "content": "22C"}, *done],
        "pending": lambda: [*opening, ask, chat_calls("c1", "c2")],
        "short": lambda: [system, {"role": "user", "content": "hi"}],
        "empty": lambda: [],
    }[scenario]()


# -- OpenAI Responses ------------------------------------------------------------
def call(call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", call_id=call_id, name="weather",
                                    arguments=json.dumps({"city": "Oslo"}), id=f"fc_{call_id}")


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "sun"}


def reasoning() -> ResponseReasoningItem:
    return ResponseReasoningItem(id="rs_1", type="reasoning", summary=[])


def responses(scenario: str) -> list[Any]:
    opening = [{"role": "developer", "content": "You are Tomori."},
               {"role": "user", "content": "hi"},
               {"type": "message", "role": "assistant", "content": "hello"},
               {"role": "user", "content": "weather?"}]
    done = [{"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "thanks"}]
    return {
        "plain": lambda: [*opening, {"role": "assistant", "content": "Sunny."}],
        "tool_pair": lambda: [*opening, reasoning(), call("c1"), output("c1"), *done],
        "parallel": lambda: [*opening, call("c1"), call("c2"), output("c1"), output("c2"),
                             *done],
        "pending": lambda: [*opening, reasoning(), call("c1"), call("c2")],
        "short": lambda: [{"role": "user", "content": "hi"}],
        "empty": lambda: [],
    }[scenario]()


# -- Anthropic Messages ------------------------------------------------------------
def tool_use(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        TextBlock(type="text", text="Let me check."),
        *(ToolUseBlock(type="tool_use", id=i, name="weather", input={"city": "Oslo"})
          for i in ids)]}


def tool_results(*ids: str, text: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": "sun"} for i in ids]
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def anthropic(scenario: str) -> list[Any]:
    opening = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [TextBlock(type="text", text="hello")]},
               {"role": "user", "content": [{"type": "text", "text": "weather?"}]}]
    done = [{"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "thanks"}]
    return {
        "plain": lambda: [*opening, {"role": "assistant", "content": "Sunny."}],
        "tool_pair": lambda: [*opening, tool_use("t1"), tool_results("t1"), *done],
        # Results and the user's next words in one message, as Anthropic asks.
        "parallel": lambda: [*opening, tool_use("t1", "t2"),
                             tool_results("t1", "t2", text="and tomorrow?"),
                             {"role": "assistant", "content": "Sunny both days."}],
        "pending": lambda: [*opening, tool_use("t1", "t2")],
        "short": lambda: [{"role": "user", "content": "hi"}],
        "empty": lambda: [],
    }[scenario]()


# -- Google Gemini ---------------------------------------------------------------------
def text(role: str, words: str) -> g.Content:
    return g.Content(role=role, parts=[g.Part.from_text(text=words)])


def calls(*names: str) -> g.Content:
    return g.Content(role="model", parts=[g.Part.from_function_call(name=n, args={"x": 1})
                                          for n in names])


def answers(*names: str) -> g.Content:
    return g.Content(role="user", parts=[
        g.Part.from_function_response(name=n, response={"result": "sun"}) for n in names])


def gemini(scenario: str) -> list[Any]:
    opening = [text("user", "hi"), text("model", "hello"), text("user", "weather?")]
    done = [text("model", "Sunny."), text("user", "thanks")]
    return {
        "plain": lambda: [*opening, text("model", "Sunny.")],
        # A REST-style dict (camelCase) next to SDK objects: both are accepted.
        "tool_pair": lambda: [*opening, calls("weather"), {"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"r": "sun"}}}]}, *done],
        "parallel": lambda: [*opening, calls("weather", "time"), answers("weather", "time"),
                             *done],
        "pending": lambda: [*opening, calls("weather", "time")],
        "short": lambda: [text("user", "hi")],
        "empty": lambda: [],
    }[scenario]()


BUILDERS: dict[str, Callable[[str], list[Any]]] = {
    "openai": chat, "openai-responses": responses, "anthropic": anthropic, "gemini": gemini}
