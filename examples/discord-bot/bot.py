"""A Discord bot with stm's short-term memory, its tool and its commands.

With DISCORD_TOKEN (and your router's key, e.g. OPENROUTER_API_KEY) set, it
runs on Discord. Without a token it rehearses offline: a fake Discord on
127.0.0.1 and a scripted model, and it prints what the bot sent.
"""

import asyncio
import os

import discord
from discord.ext import commands

import stm_discord
from stm_discord import ChatModel, Persona, Router

PERSONAS = [Persona(id="1", name="Tomori"), Persona(id="2", name="Kuro")]
SYSTEM = "You are Tomori, a cheerful member of an art club's Discord server."
MODEL = os.environ.get("STM_MODEL", "openrouter/anthropic/claude-3.5-sonnet")


async def main(token: str, model: ChatModel) -> None:
    intents = discord.Intents.default()
    intents.message_content = True  # to read the messages it answers
    bot = commands.Bot(command_prefix="!", intents=intents)

    @bot.event
    async def on_ready() -> None:
        await bot.tree.sync()  # registers /server, /persona, /capabilities, ...

    async with stm_discord.open_store("sqlite+aiosqlite:///bot.db") as stm:
        await stm_discord.add_to(bot, stm, model, personas=PERSONAS)
        async with bot:
            await bot.start(token)


if __name__ == "__main__":
    token = os.environ.get("DISCORD_TOKEN")
    if token:
        asyncio.run(main(token, Router(MODEL, system=SYSTEM)))
    else:
        from stm_discord.testing.rehearsal import rehearse

        asyncio.run(rehearse(main))
