"""examples/host-openai: the bot loop over the real OpenAI and Anthropic SDK
clients, on a mock transport (no network). The SDKs build and send every
request; a scripted model answers, calling the memory tool when nudged."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from stm_core import TOOL_NAME, Stm
from stm_core.storage.records import MemoryKey

try:  # the SDKs' HTTP library, under the name this environment gives it
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older SDK releases
    import httpx  # type: ignore[no-redef]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "host-openai"))

from anthropic_bot import anthropic_chat
from host_loop import converse
from openai_bot import openai_chat

LINES = ["hi!", "I'm painting a mural", "teal or orange for the sky?", "maybe both",
         "the sun will be orange", "what do you think?", "thanks!"]
Requests = list[dict[str, Any]]


def nudged(body: dict[str, Any]) -> bool:
    return TOOL_NAME in json.dumps(body.get("messages"))


def answered_tool(body: dict[str, Any]) -> bool:
    last = json.dumps(body["messages"][-1])
    return "tool_call_id" in last or "tool_result" in last


def openai_reply(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("tools") and nudged(body) and not answered_tool(body):
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function", "function": {
                "name": TOOL_NAME, "arguments": json.dumps({"summary": "Alice paints a mural"})}}]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "Sounds lovely!"}, "stop"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": body["model"], "choices": [{"index": 0, "message": message,
                                                 "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def anthropic_reply(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("tools") and nudged(body) and not answered_tool(body):
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME,
                                          "input": {"summary": "Alice paints a mural"}}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": "Sounds lovely!"}], "end_turn"
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def transport(reply: Callable[[dict[str, Any]], dict[str, Any]],
              requests: Requests) -> Any:
    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        requests.append(body)
        return httpx.Response(200, json=reply(body))
    return httpx.MockTransport(handle)


def openai_client(requests: Requests) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="test", base_url="http://model.test/v1", max_retries=0,
                              http_client=httpx.AsyncClient(
                                  transport=transport(openai_reply, requests)))


def anthropic_client(requests: Requests) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test", base_url="http://model.test",
                                    max_retries=0, http_client=httpx.AsyncClient(
                                        transport=transport(anthropic_reply, requests)))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_bot_remembers_through_the_sdk(stm: Stm, provider: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    requests: Requests = []
    chat = (openai_chat(openai_client(requests), "gpt-4o-mini") if provider == "openai"
            else anthropic_chat(anthropic_client(requests), "claude-3-5-haiku-latest"))
    reports = await converse(stm, chat, LINES, provider=provider, tool_format=provider)

    # Five turns fill the cadence; the sixth is nudged and the model writes.
    assert [r.nudged for r in reports] == [False] * 5 + [True, False]
    assert [len(r.tool_calls) for r in reports] == [0] * 5 + [1, 0]
    assert reports[5].tool_calls[0].ok
    assert [r.counter for r in reports] == [1, 2, 3, 4, 5, 1, 2]
    live = await stm.adapter.get_memory(MemoryKey.server("7", "1001", "1"))
    assert live is not None and live.summary == "Alice paints a mural"
    # The tool is declared in the provider's own format, and never as null.
    assert len(requests) == len(LINES) + 1  # one extra round for the tool result
    for body in requests:
        assert body["tools"] and None not in body["tools"]
        name = (body["tools"][0]["function"]["name"] if provider == "openai"
                else body["tools"][0]["name"])
        assert name == TOOL_NAME
    out = capsys.readouterr().out
    assert out.count("Tomori: Sounds lovely!") == len(LINES)
    assert (f"turn 6: 0 memory item(s); nudged; tool offered; {TOOL_NAME}: ok; "
            "recorded, counter 1") in out


async def test_no_tool_means_no_tools_key(stm: Stm) -> None:
    """A provider that cannot call tools (NovelAI) gets no ``tools`` at all,
    not ``"tools": [null]``."""
    requests: Requests = []
    reports = await converse(stm, openai_chat(openai_client(requests), "kayra"),
                             LINES[:2], provider="novelai", tool_format="openai")
    assert [r.tool_offered for r in reports] == [False, False]
    assert len(requests) == 2 and all("tools" not in body for body in requests)
