"""The model call: one router, the OpenAI-compatible Chat Completions API.

Bot authors reach their models through a router that speaks this API:
OpenRouter (``openrouter/anthropic/claude-3.5-sonnet``), a LiteLLM proxy
(``litellm/...``, with ``OPENAI_BASE_URL`` pointing at it), or OpenAI itself
(``openai/gpt-4o-mini``). The key is written as the host writes it and goes to
stm unchanged as ``Turn.provider`` (stm reads the family and model in it,
DESIGN decision 20); the router gets the model part.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from openai import AsyncOpenAI

from stm_core import ValidationError

#: Runs one tool call of the model: ``(name, arguments) -> text for the model``.
ToolRunner = Callable[[str, Any], Awaitable[str]]

#: Where a router prefix sends requests (others: the client's own default,
#: ``OPENAI_BASE_URL`` or OpenAI).
ROUTER_URLS = {"openrouter": "https://openrouter.ai/api/v1"}
#: The environment variable holding each router's key.
ROUTER_KEYS = {"openrouter": "OPENROUTER_API_KEY"}
#: Prefixes that name the router itself, not the model's maker: stripped
#: from the model name the router is sent.
ROUTER_PREFIXES = ("openrouter", "openai", "litellm", "litellm_proxy")
#: Tool rounds per turn before the model must answer in text.
MAX_TOOL_ROUNDS = 3


class ChatModel(Protocol):
    """What the message loop calls: the model's reply to ``messages``."""

    #: The provider key as the host wrote it (``Turn.provider``).
    key: str

    async def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    run_tool: ToolRunner) -> str: ...


def api_model(key: str) -> str:
    """The model name the router is sent: the key without a router prefix."""
    prefix, slash, rest = key.partition("/")
    return rest if slash and prefix.lower() in ROUTER_PREFIXES else key


def default_client(key: str) -> AsyncOpenAI:
    prefix = key.partition("/")[0].lower()
    if prefix in ROUTER_URLS:
        return AsyncOpenAI(base_url=ROUTER_URLS[prefix], api_key=os.environ.get(
            ROUTER_KEYS[prefix]))
    return AsyncOpenAI()


class Router:
    """The model behind an OpenAI-compatible router, with a system prompt."""

    def __init__(self, key: str, *, system: str = "", client: AsyncOpenAI | None = None,
                 max_tool_rounds: int = MAX_TOOL_ROUNDS) -> None:
        if not isinstance(key, str) or not key.strip():
            raise ValidationError(f"the model key must be non-blank text, got {key!r}",
                                  field="key", allowed="a key such as 'openai/gpt-4o-mini'")
        if not isinstance(system, str):
            raise ValidationError("system must be text", field="system", allowed="text")
        if (isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int)
                or not 0 <= max_tool_rounds <= 10):
            raise ValidationError(f"max_tool_rounds must be an integer from 0 to 10, got "
                                  f"{max_tool_rounds!r}", field="max_tool_rounds",
                                  allowed="an integer from 0 to 10")
        self.key = key
        self.system = system
        self.client = client if client is not None else default_client(key)
        self.max_tool_rounds = max_tool_rounds

    async def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    run_tool: ToolRunner) -> str:
        sent: list[Any] = ([{"role": "system", "content": self.system}] if self.system
                           else []) + list(messages)
        for round_number in range(self.max_tool_rounds + 1):
            offer = tools if round_number < self.max_tool_rounds else []
            extra: dict[str, Any] = {"tools": offer} if offer else {}
            response = await self.client.chat.completions.create(
                model=api_model(self.key), messages=sent, **extra)
            message = response.choices[0].message
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                return message.content or ""
            sent.append(message.model_dump(exclude_none=True))
            for call in calls:
                result = await run_tool(call.function.name, call.function.arguments)
                sent.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return ""  # pragma: no cover - the last round offers no tool

