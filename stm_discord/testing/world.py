"""A scripted server for the tests and ``make discord-demo``, and a bot on it.

One guild (``Art Club``) with two channels and a thread, an admin (Alice,
Manage Server) and a member (Bob), and a DM channel. :func:`running_bot`
starts the kit's bot with the real discord.py client against a
:class:`~stm_discord.testing.fake_discord.FakeDiscord`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs
import discord
from discord.ext import commands

from stm_core import Stm
from stm_discord import add_to
from stm_discord.mapping import Persona
from stm_discord.model import ChatModel
from stm_discord.testing.fake_discord import (
    ADMIN_PERMISSIONS,
    MEMBER_PERMISSIONS,
    Channel,
    FakeDiscord,
    Guild,
    User,
)

BOT = User(id=99, name="Tomori", bot=True)
ALICE = User(id=42, name="Alice", permissions=ADMIN_PERMISSIONS)
BOB = User(id=43, name="Bob", permissions=MEMBER_PERMISSIONS)
GENERAL = Channel(id=1001, name="general")
SECRETS = Channel(id=1002, name="secrets")
PLANS = Channel(id=1003, name="plans", parent_id=SECRETS.id)
ART_CLUB = Guild(id=7, name="Art Club", channels=(GENERAL, SECRETS, PLANS),
                 members=(ALICE, BOB, BOT))
DM = 5000
PERSONAS = (Persona(id="1", name="Tomori"), Persona(id="2", name="Kuro"))


@attrs.define
class Running:
    fake: FakeDiscord
    bot: commands.Bot
    stm: Stm


def make_bot() -> commands.Bot:
    intents = discord.Intents.default()
    intents.message_content = True
    # guild_ready_timeout: how long discord.py waits for more guilds after READY.
    return commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)


@contextlib.asynccontextmanager
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord([ART_CLUB], bot=BOT) as fake:
        fake.point_discord_py_here()
        yield fake


@contextlib.asynccontextmanager
async def running_bot(fake: FakeDiscord, stm: Stm, model: ChatModel, *,
                      personas: Sequence[Persona] = PERSONAS,
                      **chat: Any) -> AsyncIterator[Running]:
    """The kit's bot, connected to ``fake`` and ready."""
    bot = make_bot()
    await add_to(bot, stm, model, personas=personas, **chat)
    task = asyncio.create_task(bot.start("fake-token"))
    try:
        await asyncio.wait_for(bot.wait_until_ready(), 10)
        yield Running(fake=fake, bot=bot, stm=stm)
    finally:
        await bot.close()
        with contextlib.suppress(asyncio.CancelledError):
            await task
