"""The real OpenAI, Anthropic and Google GenAI SDK clients, offline.

Each client gets an ``httpx`` client on a mock transport that records the
request the SDK built and answers with a minimal valid response, so a test
sees exactly what the SDK would send, and that the SDK accepted the input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import httpx2 as httpx
import openai
from google import genai
from google.genai import types as genai_types

Handler = Callable[[httpx.Request], httpx.Response]

CHAT_REPLY = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "ok"}}]}
RESPONSES_REPLY = {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-4o",
                   "status": "completed", "output": [], "parallel_tool_calls": True,
                   "tool_choice": "auto", "tools": []}
ANTHROPIC_REPLY = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": "claude-3-5-sonnet-latest", "stop_reason": "end_turn",
                   "content": [{"type": "text", "text": "ok"}],
                   "usage": {"input_tokens": 1, "output_tokens": 1}}
GEMINI_REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}


class Wire:
    """The JSON bodies of the requests sent through one mock transport."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        self.paths.append(request.url.path)
        return httpx.Response(200, json=self.reply)

    def http(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handle))

    @property
    def last(self) -> dict[str, Any]:
        assert self.bodies, "the SDK sent no request"
        return self.bodies[-1]


def send_chat(messages: Sequence[Any], tools: Sequence[Any] = ()) -> dict[str, Any]:
    """``messages`` (and ``tools``) through ``chat.completions.create``."""
    wire = Wire(CHAT_REPLY)
    client = openai.OpenAI(api_key="test", http_client=wire.http(), max_retries=0)
    extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
    client.chat.completions.create(model="gpt-4o", messages=list(messages), **extra)
    assert wire.paths == ["/v1/chat/completions"]
    return wire.last


def send_responses(items: Sequence[Any], tools: Sequence[Any] = ()) -> dict[str, Any]:
    """Input ``items`` (and ``tools``) through ``responses.create``."""
    wire = Wire(RESPONSES_REPLY)
    client = openai.OpenAI(api_key="test", http_client=wire.http(), max_retries=0)
    extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
    client.responses.create(model="gpt-4o", input=list(items), **extra)
    assert wire.paths == ["/v1/responses"]
    return wire.last


def send_anthropic(messages: Sequence[Any], tools: Sequence[Any] = ()) -> dict[str, Any]:
    """``messages`` (and ``tools``) through ``messages.create``."""
    wire = Wire(ANTHROPIC_REPLY)
    client = anthropic.Anthropic(api_key="test", http_client=wire.http(), max_retries=0)
    extra: dict[str, Any] = {"tools": list(tools)} if tools else {}
    client.messages.create(model="claude-3-5-sonnet-latest", max_tokens=64,
                           messages=list(messages), **extra)
    assert wire.paths == ["/v1/messages"]
    return wire.last


def send_gemini(contents: Sequence[Any],
                declarations: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """``contents`` (and function ``declarations``) through ``models.generate_content``."""
    wire = Wire(GEMINI_REPLY)
    client = genai.Client(api_key="test", http_options=genai_types.HttpOptions(
        httpx_client=wire.http()))
    config = None
    if declarations:
        config = genai_types.GenerateContentConfig(tools=[genai_types.Tool(
            function_declarations=[genai_types.FunctionDeclaration.model_validate(d)
                                   for d in declarations])])
    client.models.generate_content(model="gemini-2.0-flash", contents=list(contents),
                                   config=config)
    assert len(wire.paths) == 1 and wire.paths[0].endswith(":generateContent")
    return wire.last
