"""Who acts in an interaction, and how a refused or failed one is answered."""

from __future__ import annotations

import logging
from typing import Any

import discord

from stm_core import Actor, PermissionDenied, ValidationError

log = logging.getLogger("stm.discord")

FAILED = "Something went wrong. Please try again later."


def actor_of(interaction: discord.Interaction) -> Actor:
    """The member as stm's permission policy sees them: ``can_manage`` is
    Discord's Manage Server in the channel (never in a DM)."""
    can_manage = interaction.guild_id is not None and interaction.permissions.manage_guild
    return Actor(user_id=str(interaction.user.id), can_manage=can_manage)


def not_saved(error: Exception) -> discord.Embed:
    """The error embed of a refused or invalid change."""
    return discord.Embed(title="Not saved", description=str(error),
                         colour=discord.Colour.red())


async def answer_error(interaction: discord.Interaction, error: BaseException,
                       what: str) -> None:
    """A refused or invalid call (the permission policy, a value stm refuses)
    is shown to the member; anything else is logged and answered with an
    apology, never with silence."""
    if isinstance(error, PermissionDenied | ValidationError):
        answer, embed = "", not_saved(error)
    else:
        log.error("%s failed", what, exc_info=error)
        answer, embed = FAILED, None
    embeds = [embed] if embed is not None else []
    if interaction.response.is_done():
        await interaction.followup.send(answer, embeds=embeds, ephemeral=True)
    else:
        await interaction.response.send_message(answer or None, embeds=embeds,
                                                ephemeral=True)


class Modal(discord.ui.Modal):
    """A modal whose failures are answered (:func:`answer_error`)."""

    # discord.py's Modal itself narrows BaseView's signature (no item).
    async def on_error(self, interaction: discord.Interaction,  # type: ignore[override]
                       error: Exception, /) -> None:
        await answer_error(interaction, error, f"the modal {self.title!r}")


class View(discord.ui.View):
    """A view whose failures are answered (:func:`answer_error`)."""

    async def on_error(self, interaction: discord.Interaction, error: Exception,
                       item: discord.ui.Item[Any], /) -> None:
        await answer_error(interaction, error, f"{type(self).__name__}")
