"""A small host, run with the Python of a virtual environment where stm and the
example plugins are installed: it loads the entry points as any host would and
prints, as JSON, what one server's turns look like.

    python acme_host.py DATABASE_URL RENDER_MODE [PROVIDER ...]

The providers default to acme, acme-lite and openai.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from stm_core import HistoryMessage, PersonaResponse, Settings, Turn, open_store
from stm_core.errors import UnknownProvider

SERVER = "3001"
HERE, THERE = "2001", "2002"


def turn(channel_id: str, provider: str) -> Turn:
    return Turn(user_id="1001", channel_id=channel_id, server_id=SERVER, provider=provider,
                bot_name="Assistant", triggerer_name="Alice",
                channel_names={HERE: "general", THERE: "heists"})


async def main(url: str, render_mode: str, providers: list[str]) -> dict[str, Any]:
    async with open_store(url, settings=Settings(), load_entrypoints=True) as stm:
        await stm.admin.set_server_params(SERVER, render_mode=render_mode, refresh_cadence=1)
        # Another channel gets a summary and a recorded exchange.
        written = await stm.apply_tool_call(turn(THERE, "acme"), {"summary": "Planning a heist."})
        await stm.record_turn(
            turn(THERE, "acme"),
            [HistoryMessage(author_type="user", content="bring the map", speaker_name="Alice")],
            [PersonaResponse(content="Map packed.", persona_name="Assistant")])
        await stm.record_turn(
            turn(HERE, "acme"),
            [HistoryMessage(author_type="user", content="hello", speaker_name="Alice")],
            [PersonaResponse(content="Hi!", persona_name="Assistant")])
        out: dict[str, Any] = {"tool_call_ok": written.ok}
        for provider in providers:
            ctx = await stm.build_context(turn(HERE, provider))
            out[provider] = {
                "other_channels": [i.text for i in ctx.memory_items
                                   if i.kind == "other_channels"],
                "nudge": ctx.nudge_item.text if ctx.nudge_item else None,
                "tool": await tool_or_error(stm, turn(HERE, provider)),
            }
        return out


async def tool_or_error(stm: Any, turn: Turn) -> dict[str, Any] | None:
    """The declaration, or the name of the error when no format knows the provider."""
    try:
        schema: dict[str, Any] | None = await stm.tool_schema(turn)
    except UnknownProvider as exc:
        return {"error": type(exc).__name__}
    return schema


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2],
                                      sys.argv[3:] or ["acme", "acme-lite", "openai"]))))
