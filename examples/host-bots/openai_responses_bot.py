"""The same bot over the OpenAI SDK's Responses API with stm's memory.

Run it with ``OPENAI_API_KEY`` set: ``python openai_responses_bot.py``, or with
no key: ``python openai_responses_bot.py --offline`` (a scripted model,
scripted.py).
"""

from __future__ import annotations

from typing import Any

import scripted
from host_loop import Chat, ToolRunner, converse, run_bot, user_lines
from openai import AsyncOpenAI

from stm_core import open_store

SYSTEM = "You are Tomori, a cheerful member of an art club's chat."


def responses_chat(client: AsyncOpenAI, model: str) -> Chat:
    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   run_tool: ToolRunner) -> str:
        # Chat messages ({"role", "content"}) are Responses input items as they are.
        items: list[Any] = list(messages)
        while True:
            extra: dict[str, Any] = {"tools": tools} if tools else {}
            response = await client.responses.create(model=model, instructions=SYSTEM,
                                                     input=items, **extra)
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return str(response.output_text)
            items += [item.model_dump(exclude_none=True) for item in response.output]
            for call in calls:
                items.append({"type": "function_call_output", "call_id": call.call_id,
                              "output": await run_tool(call.name, call.arguments)})
    return chat


async def main(*, offline: bool, url: str = "sqlite+aiosqlite:///bot.db",
               model: str = "gpt-4o-mini") -> None:
    client = (scripted.openai_client(scripted.openai_responses_answer) if offline
              else AsyncOpenAI())
    async with open_store(url) as stm:
        await converse(stm, responses_chat(client, model), user_lines(), provider="openai",
                       tool_format="openai-responses")


if __name__ == "__main__":
    run_bot(main, __doc__, key_variables=("OPENAI_API_KEY",),
            model="gpt-4o-mini")
