"""stm's Discord kit (discord.py 2.x): the message loop and the command surface.

``pip install "stm-core[discord]"``. A bot adds both cogs in a few lines::

    async with stm_discord.open_store("sqlite+aiosqlite:///bot.db") as stm:
        await stm_discord.add_to(bot, stm, Router("openrouter/anthropic/claude-3.5-sonnet"))
        await bot.start(token)

Importing ``stm_core`` or ``stm_plugins`` never imports this package (nor discord).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from discord.ext import commands

from stm_core import Stm, ValidationError
from stm_core import open_store as open_core_store
from stm_discord import permissions
from stm_discord.commands import StmCommands
from stm_discord.loop import FAILURE_REPLY, StmChat
from stm_discord.mapping import Persona
from stm_discord.model import ChatModel, Router
from stm_discord.replies import split_reply

#: Personas a bot may have: the options of one Discord select menu.
MAX_PERSONAS = 25
#: The persona of a bot that names none.
DEFAULT_PERSONAS = (Persona(id="1", name="Assistant"),)


@asynccontextmanager
async def open_store(url: str | None = None, *, plugins: Iterable[object] = (),
                     **kwargs: Any) -> AsyncIterator[Stm]:
    """:func:`stm_core.open_store` with the Discord permission policy
    (:mod:`stm_discord.permissions`) registered."""
    async with open_core_store(url, plugins=[permissions, *plugins], **kwargs) as stm:
        yield stm


async def add_to(bot: commands.Bot, stm: Stm, model: ChatModel, *,
                 personas: Sequence[Persona] = DEFAULT_PERSONAS, **chat: Any) -> None:
    """Add the message loop and the command surface to ``bot``. The bot
    answers as ``personas[0]``; the commands know every persona. ``chat``
    goes to :class:`StmChat` (``window``, ``failure_reply``, ``model_timeout``).

    Raises :class:`~stm_core.ValidationError` for no persona or more than 25
    (the persona picker's limit), a persona that is not a :class:`Persona`, or
    two personas with one id."""
    personas = tuple(personas)
    if not personas or not all(isinstance(p, Persona) for p in personas):
        raise ValidationError("personas must be one or more stm_discord.Persona",
                              field="personas", allowed="Persona(id=..., name=...), ...")
    if len(personas) > MAX_PERSONAS:
        raise ValidationError(f"at most {MAX_PERSONAS} personas (a Discord picker's "
                              f"limit), got {len(personas)}", field="personas",
                              allowed=f"1 to {MAX_PERSONAS} personas")
    if len({p.id for p in personas}) != len(personas):
        raise ValidationError("two personas have the same id", field="personas",
                              allowed="distinct persona ids")
    await bot.add_cog(StmChat(bot, stm, model, personas=personas, **chat))
    await bot.add_cog(StmCommands(stm, personas))


__all__ = [
    "DEFAULT_PERSONAS",
    "FAILURE_REPLY",
    "ChatModel",
    "Persona",
    "Router",
    "StmChat",
    "StmCommands",
    "add_to",
    "open_store",
    "permissions",
    "split_reply",
]
