"""The complete host example shown in ``docs/host-guide.md`` (between the markers).

``test_host_guide_example`` runs it against every backend and checks that the
guide shows exactly this code.
"""

# -- start host-example --
import asyncio
import json
from typing import Any

from stm_core import HistoryMessage, PersonaResponse, Turn, open_store
from stm_core.inject import inject
from stm_core.text.intent import detect_long_term_intent
from stm_core.tool import TOOL_NAME

SYSTEM_PROMPT = "You are Tomori, a cheerful assistant in the Art Club server."


async def call_model(messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Stand-in for your LLM client, e.g. with the OpenAI SDK:
    ``(await client.chat.completions.create(model=..., messages=messages,
    tools=tools or NOT_GIVEN)).choices[0].message.model_dump()``.

    This one calls the memory tool whenever stm's nudge asks it to.
    """
    nudged = any(TOOL_NAME in str(m.get("content")) for m in messages)
    if tools and nudged and messages[-1]["role"] != "tool":
        arguments = {"summary": f"Alice and Tomori talked about: {messages[-1]['content']}"}
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": TOOL_NAME, "arguments": json.dumps(arguments)}}]}
    return {"role": "assistant", "content": "Sounds lovely!"}


async def handle_message(stm: Any, dialogue: list[dict[str, Any]], *, user_id: str,
                         user_name: str, channel_id: str, server_id: str | None) -> str:
    """One bot turn. ``dialogue`` is the channel's recent messages, oldest
    first, ending with the user's new message; a user's message carries the
    author's id, which the host keeps and the model is not sent."""
    turn = Turn(
        user_id=user_id, channel_id=channel_id, server_id=server_id,
        persona_id="1", persona_lineage_id="1",
        bot_name="Tomori", triggerer_name=user_name, provider="openai",
        explicit_long_term_intent=detect_long_term_intent(dialogue[-1]["content"]),
    )

    # 1. The short-term memory of this turn (never raises).
    ctx = await stm.build_context(turn)
    # 2. Splice it into the prompt at the configured dialogue depths.
    chat = [{key: m[key] for key in ("role", "content", "name") if key in m} for m in dialogue]
    messages = inject([{"role": "system", "content": SYSTEM_PROMPT}, *chat], ctx)
    # 3. Offer the tool, unless stm says not to this turn.
    schema = await stm.tool_schema(turn)
    tools = [schema] if schema else []

    reply = await call_model(messages, tools)
    while reply.get("tool_calls"):
        messages.append(reply)
        for call in reply["tool_calls"]:
            if call["function"]["name"] == TOOL_NAME:
                # 4. Apply the call; failures come back as a result for the model.
                result = await stm.apply_tool_call(turn, json.loads(call["function"]["arguments"]))
                content = result.message
            else:
                content = "unknown tool"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        reply = await call_model(messages, tools)

    # 5. After replying: keep the channel's last lines and count the turn. The
    #    author id of each user line is what lets a user's lines be exported
    #    and forgotten later; the user's new message is marked as the trigger.
    history = [HistoryMessage(author_type="user" if m["role"] == "user" else "persona",
                              content=m["content"], speaker_name=m.get("name"),
                              author_id=m.get("author_id"), is_trigger=m is dialogue[-1])
               for m in dialogue]
    await stm.record_turn(turn, history, [PersonaResponse(
        content=reply["content"], persona_name="Tomori", persona_id="1",
        persona_lineage_id="1")])
    return str(reply["content"])


async def converse(stm: Any) -> list[str]:
    """A short conversation in one channel; the host keeps the dialogue."""
    dialogue: list[dict[str, Any]] = []
    answers = []
    for text in ["hi!", "I'm painting a mural", "teal or orange for the sky?",
                 "maybe both", "the sun will be orange", "what do you think?"]:
        dialogue.append({"role": "user", "content": text, "name": "Alice", "author_id": "42"})
        answer = await handle_message(stm, dialogue[-10:], user_id="42", user_name="Alice",
                                      channel_id="1001", server_id="7")
        answers.append(answer)
        dialogue.append({"role": "assistant", "content": answer})
    return answers


async def main(url: str = "sqlite+aiosqlite:///bot.db") -> None:
    async with open_store(url) as stm:
        print(await converse(stm))


if __name__ == "__main__":
    asyncio.run(main())
# -- end host-example --
