"""A small bot over the OpenAI SDK (Chat Completions) with stm's memory.

Run it with ``OPENAI_API_KEY`` set: ``python openai_bot.py`` reads lines from
standard input (or says the sample lines) and prints each reply and what stm
did. ``python openai_bot.py --offline`` needs no key: a scripted model answers
on the SDK's own client (scripted.py).
"""

from __future__ import annotations

from typing import Any

import scripted
from host_loop import Chat, ToolRunner, converse, run_bot, user_lines
from openai import AsyncOpenAI

from stm_core import open_store

SYSTEM = "You are Tomori, a cheerful member of an art club's chat."


def openai_chat(client: AsyncOpenAI, model: str) -> Chat:
    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   run_tool: ToolRunner) -> str:
        sent: list[Any] = [{"role": "system", "content": SYSTEM}, *messages]
        while True:
            extra: dict[str, Any] = {"tools": tools} if tools else {}
            response = await client.chat.completions.create(model=model, messages=sent,
                                                            **extra)
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            sent.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = await run_tool(call.function.name, call.function.arguments)
                sent.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return chat


async def main(*, offline: bool, url: str = "sqlite+aiosqlite:///bot.db",
               model: str = "gpt-4o-mini") -> None:
    client = scripted.openai_client() if offline else AsyncOpenAI()
    async with open_store(url) as stm:
        await converse(stm, openai_chat(client, model), user_lines(), provider="openai",
                       tool_format="openai")


if __name__ == "__main__":
    run_bot(main, __doc__, key_variables=("OPENAI_API_KEY",),
            model="gpt-4o-mini")
