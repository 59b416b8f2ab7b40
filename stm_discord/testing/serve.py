"""Run the kit's bot (scripted model) against a fake Discord already listening.

``python -m stm_discord.testing.serve PORT DATABASE_URL`` runs until it is
stopped: a bot process of its own, for tests that restart the bot.
"""

from __future__ import annotations

import asyncio
import sys

import discord.gateway
import discord.http
import yarl

from stm_discord import add_to, open_store
from stm_discord.testing.scripted_model import ScriptedModel
from stm_discord.testing.world import PERSONAS, make_bot


async def serve(port: int, url: str) -> None:
    # discord.py has no setting for these two; see fake_discord.
    discord.http.Route.BASE = f"http://127.0.0.1:{port}/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(
        f"ws://127.0.0.1:{port}/gateway")
    bot = make_bot()
    async with open_store(url, load_entrypoints=False) as stm:
        await add_to(bot, stm, ScriptedModel().router(), personas=PERSONAS)
        await bot.start("fake-token")


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))
