"""An offline model: the OpenAI SDK's real client, answered by a script.

The client builds and sends every request as it would to a router; the
script answers on the SDK's own transport with the SDK's own response types.
It collects each request body in :attr:`ScriptedModel.requests`.

The script, on the last user line:

* "remember X" with the memory tool offered: calls the tool with the summary
  "X", then answers "Noted: X";
* "echo X": answers X;
* "long": answers 4,500 characters (more than one Discord message);
* otherwise: "I hear you, <speaker>." and, when its memory shows in the prompt,
  "I remember: <memory>".

``fail_next`` makes the next requests fail with a server error; while
``held`` is set, requests wait until it is cleared... or forever (a network
that never answers).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)

from stm_core import TOOL_NAME
from stm_discord.model import Router

try:  # the HTTP library the SDK uses, under the name it is installed as
    import httpx2 as httpx
except ImportError:  # pragma: no cover - SDK releases on plain httpx
    import httpx  # type: ignore[no-redef, import-not-found, unused-ignore]

Body = dict[str, Any]
#: How stm's same-channel memory block opens (reference §2.2).
_MEMORY = re.compile(r"short term memory for this ongoing conversation:\n(.+?)\]", re.S)
LONG_REPLY = " ".join(["word"] * 900)


class ScriptedModel:
    def __init__(self) -> None:
        self.requests: list[Body] = []
        #: How many next requests fail (HTTP 500).
        self.fail_next = 0
        #: While set, every request waits for :attr:`released`.
        self.held = False
        self.released = asyncio.Event()
        #: Set when a request has arrived (and, if held, is waiting).
        self.arrived = asyncio.Event()

    def client(self) -> AsyncOpenAI:
        transport = httpx.MockTransport(self._handle)
        return AsyncOpenAI(api_key="offline", base_url="http://offline.invalid/v1",
                           max_retries=0, http_client=httpx.AsyncClient(transport=transport))

    def router(self, key: str = "openrouter/anthropic/claude-3.5-sonnet", *,
               system: str = "") -> Router:
        return Router(key, system=system, client=self.client())

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.arrived.set()
        if self.held:
            await self.released.wait()
        if self.fail_next:
            self.fail_next -= 1
            return httpx.Response(500, json={"error": {"message": "scripted failure"}})
        return httpx.Response(200, json=self.answer(body))

    def answer(self, body: Body) -> Body:
        messages = body["messages"]
        last_user = next(m for m in reversed(messages) if m["role"] == "user")
        speaker, _, said = str(last_user["content"]).partition(": ")
        offered = any(t["function"]["name"] == TOOL_NAME for t in body.get("tools") or [])
        answered = messages[-1]["role"] == "tool"
        wish = re.search(r"remember (.+)", said, re.I)
        if wish and offered and not answered:
            return _completion(body, tool_summary=wish.group(1).strip())
        if wish:
            return _completion(body, text=f"Noted: {wish.group(1).strip()}")
        echo = re.search(r"\becho (.+)", said)
        if echo:
            return _completion(body, text=echo.group(1))
        if "long" in said.lower():
            return _completion(body, text=LONG_REPLY)
        text = f"I hear you, {speaker}."
        shown = _MEMORY.search(json.dumps(messages, ensure_ascii=False).replace("\\n", "\n"))
        if shown:
            text += f" I remember: {shown.group(1).strip()}"
        return _completion(body, text=text)


def _completion(body: Body, *, text: str | None = None,
                tool_summary: str | None = None) -> Body:
    if tool_summary is not None:
        message = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function", function=Function(
                    name=TOOL_NAME, arguments=json.dumps({"summary": tool_summary})))])
    else:
        message = ChatCompletionMessage(role="assistant", content=text)
    choice = Choice(index=0, message=message,
                    finish_reason="tool_calls" if tool_summary is not None else "stop")
    return ChatCompletion(id="chatcmpl-offline", object="chat.completion", created=0,
                          model=body["model"], choices=[choice]).model_dump(mode="json")
