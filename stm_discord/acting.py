"""Who acts in an interaction, and how a refused change is shown."""

from __future__ import annotations

import discord

from stm_core import Actor


def actor_of(interaction: discord.Interaction) -> Actor:
    """The member as stm's permission policy sees them: ``can_manage`` is
    Discord's Manage Server in the channel (never in a DM)."""
    can_manage = interaction.guild_id is not None and interaction.permissions.manage_guild
    return Actor(user_id=str(interaction.user.id), can_manage=can_manage)


def not_saved(error: Exception) -> discord.Embed:
    """The error embed of a refused or invalid change."""
    return discord.Embed(title="Not saved", description=str(error),
                         colour=discord.Colour.red())
