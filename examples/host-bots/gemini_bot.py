"""The same bot over Google's Gen AI SDK (Gemini) with stm's memory.

Run it with ``GEMINI_API_KEY`` set: ``python gemini_bot.py``, or with no key:
``python gemini_bot.py --offline`` (a scripted model, scripted.py).
"""

from __future__ import annotations

from typing import Any

import scripted
from google import genai
from google.genai import types
from host_loop import Chat, ToolRunner, converse, run_bot, user_lines

from stm_core import open_store

SYSTEM = "You are Tomori, a cheerful member of an art club's chat."


def gemini_contents(messages: list[dict[str, Any]]) -> list[types.Content]:
    """Chat messages as Gemini contents: the assistant is the ``model``, and
    stm's items (user role) join the user content next to them as parts."""
    contents: list[types.Content] = []
    for message in messages:
        role = "model" if message["role"] == "assistant" else "user"
        part = types.Part(text=message["content"])
        if contents and contents[-1].role == role and contents[-1].parts is not None:
            contents[-1].parts.append(part)
        else:
            contents.append(types.Content(role=role, parts=[part]))
    return contents


def gemini_chat(client: genai.Client, model: str) -> Chat:
    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   run_tool: ToolRunner) -> str:
        contents = gemini_contents(messages)
        config = types.GenerateContentConfig(
            system_instruction=SYSTEM,
            tools=[types.Tool(function_declarations=[
                types.FunctionDeclaration.model_validate(tool) for tool in tools])]
            if tools else None,
            # stm applies the call itself: the SDK must not run Python functions.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        while True:
            response = await client.aio.models.generate_content(
                model=model, contents=contents, config=config)
            calls = response.function_calls
            if not calls or not response.candidates:
                return response.text or ""
            reply = response.candidates[0].content
            if reply is not None:
                contents.append(reply)
            results = [types.Part.from_function_response(
                name=call.name or "", response={"result": await run_tool(call.name or "",
                                                                          call.args or {})})
                for call in calls]
            contents.append(types.Content(role="user", parts=results))
    return chat


async def main(*, offline: bool, url: str = "sqlite+aiosqlite:///bot.db",
               model: str = "gemini-2.5-flash") -> None:
    client = scripted.gemini_client() if offline else genai.Client()
    async with open_store(url) as stm:
        await converse(stm, gemini_chat(client, model), user_lines(), provider="gemini",
                       tool_format="gemini")


if __name__ == "__main__":
    run_bot(main, __doc__, key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            model="gemini-2.5-flash")
