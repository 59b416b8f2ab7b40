"""The same bot over the Anthropic SDK (Messages API) with stm's memory.

Run it with ``ANTHROPIC_API_KEY`` set: ``python anthropic_bot.py``, or with no
key: ``python anthropic_bot.py --offline`` (a scripted model, scripted.py).
"""

from __future__ import annotations

from typing import Any

import scripted
from anthropic import AsyncAnthropic
from host_loop import Chat, ToolRunner, converse, run_bot, user_lines

from stm_core import open_store

SYSTEM = "You are Tomori, a cheerful member of an art club's chat."


def alternating(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic's turns alternate: stm's items (user role) join the user
    message next to them, as text blocks of their own."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        block = {"type": "text", "text": message["content"]}
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].append(block)
        else:
            merged.append({"role": message["role"], "content": [block]})
    return merged


def anthropic_chat(client: AsyncAnthropic, model: str) -> Chat:
    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   run_tool: ToolRunner) -> str:
        sent: list[Any] = alternating(messages)
        while True:
            extra: dict[str, Any] = {"tools": tools} if tools else {}
            response = await client.messages.create(model=model, max_tokens=1024,
                                                    system=SYSTEM, messages=sent, **extra)
            calls = [b for b in response.content if b.type == "tool_use"]
            if not calls:
                return "".join(b.text for b in response.content if b.type == "text")
            sent.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in response.content]})
            results = [{"type": "tool_result", "tool_use_id": call.id,
                        "content": await run_tool(call.name, call.input)} for call in calls]
            sent.append({"role": "user", "content": results})
    return chat


async def main(*, offline: bool, url: str = "sqlite+aiosqlite:///bot.db",
               model: str = "claude-3-5-haiku-latest") -> None:
    client = scripted.anthropic_client() if offline else AsyncAnthropic()
    async with open_store(url) as stm:
        await converse(stm, anthropic_chat(client, model), user_lines(),
                       provider="anthropic", tool_format="anthropic")


if __name__ == "__main__":
    run_bot(main, __doc__, key_variables=("ANTHROPIC_API_KEY",),
            model="claude-3-5-haiku-latest")
