"""The command surface of reference §11, as discord.py application commands.

Every command calls ``stm.admin`` with the member as an
:class:`~stm_core.Actor` (``can_manage``: Discord's Manage Server in the
channel), so the ``stm_admin_permission`` policy decides. A guarded command
asks the policy before it shows anything, and the admin call that writes asks
again. ``/server …`` and ``/capabilities …`` are guild-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from stm_core import AdminAction, Stm
from stm_discord import views
from stm_discord.acting import actor_of, answer_error
from stm_discord.mapping import Persona

#: Discord's bounds of the parameters (reference §11).
Cadence = app_commands.Range[int, 1, 100]
NudgeDepth = app_commands.Range[int, 0, 20]
ContentDepth = app_commands.Range[int, -1, 20]
CrudeMessages = app_commands.Range[int, 1, 10]
GUILD_ONLY = "This command works in a server only."
REFUSED = "You need the **Manage Server** permission for this."
#: How the echo of ``/server stm parameters`` names each parameter.
PARAM_LABELS = {"refresh_cadence": "Refresh cadence", "render_mode": "Render mode",
                "crude_message_count": "Crude messages",
                "nudge_injection_depth": "Nudge depth",
                "content_injection_depth": "Content depth"}
HELP = """**Short-term memory**
The bot keeps a short memory of each channel: a summary (or one note per category) it \
writes itself, and the last lines. It shows other channels' memories where they are not \
private.
• `/persona stm view`: what the bot remembers here.
• `/persona stm edit`: correct it (Manage Server in a server).
• `/server stm parameters`, `prompt-edit`, `categories-edit`, `privacy-bypass`, \
`/server private-channels`, `/capabilities manage`: server settings (Manage Server).
• `/personal stm`: let your memories from other servers follow you, or clear yours."""


async def say(interaction: discord.Interaction, text: str | None = None, *,
              embed: discord.Embed | None = None, view: discord.ui.View | None = None,
              ephemeral: bool = True) -> None:
    """Answer the interaction, or follow up when it was answered already."""
    embeds = [embed] if embed is not None else []
    shown = view if view is not None else discord.utils.MISSING
    if interaction.response.is_done():
        await interaction.followup.send(text or "", embeds=embeds, view=shown,
                                        ephemeral=ephemeral)
    else:
        await interaction.response.send_message(text, embeds=embeds, view=shown,
                                                ephemeral=ephemeral)


class Surface:
    """What every command needs: the store, the personas, the checks."""

    def __init__(self, stm: Stm, personas: Sequence[Persona]) -> None:
        self.stm = stm
        self.personas = tuple(personas)

    def allowed(self, interaction: discord.Interaction, name: str, *, writes: bool) -> bool:
        """The permission policy's answer for the server-scope admin call ``name``."""
        guild = str(interaction.guild_id) if interaction.guild_id is not None else None
        action = AdminAction(name=name, writes=writes, scope="server", server_id=guild,
                             channel_id=str(interaction.channel_id))
        return self.stm.hooks.admin_allowed(actor_of(interaction), action)

    async def guard(self, interaction: discord.Interaction, name: str, *,
                    writes: bool) -> bool:
        """Guild-only and allowed by the policy; else refuse (ephemeral)."""
        if interaction.guild_id is None:
            await say(interaction, GUILD_ONLY)
            return False
        if not self.allowed(interaction, name, writes=writes):
            await say(interaction, REFUSED)
            return False
        return True


class StmCommands(commands.Cog):
    """``/server``, ``/persona``, ``/capabilities``, ``/personal`` and ``/help``."""

    server = app_commands.Group(name="server", description="Server settings",
                                guild_only=True,
                                default_permissions=discord.Permissions(manage_guild=True))
    server_stm = app_commands.Group(name="stm", description="Short-term memory settings",
                                    parent=server)
    persona = app_commands.Group(name="persona", description="Personas")
    persona_stm = app_commands.Group(name="stm", description="A persona's short-term memory",
                                     parent=persona)
    capabilities = app_commands.Group(
        name="capabilities", description="What the bot may do here", guild_only=True,
        default_permissions=discord.Permissions(manage_guild=True))
    personal = app_commands.Group(name="personal", description="Your own settings")
    help = app_commands.Group(name="help", description="Guides")

    def __init__(self, stm: Stm, personas: Sequence[Persona]) -> None:
        self.surface = Surface(stm, personas)
        self.stm = stm

    async def cog_app_command_error(self, interaction: discord.Interaction,
                                    error: app_commands.AppCommandError) -> None:
        """A refused or invalid call (the policy, a value stm refuses) is shown to
        the member; anything else is logged and answered with an apology."""
        command = interaction.command.qualified_name if interaction.command else "?"
        await answer_error(interaction, getattr(error, "original", error), f"/{command}")

    # -- /server stm parameters -------------------------------------------------------
    @server_stm.command(name="parameters", description="Show or change the memory settings")
    @app_commands.rename(refresh_cadence="refresh-cadence", render_mode="render-mode",
                         crude_messages="crude-messages", nudge_depth="nudge-depth",
                         content_depth="content-depth")
    async def parameters(self, interaction: discord.Interaction,
                         refresh_cadence: Cadence | None = None,
                         render_mode: Literal["supersede", "crude_summary"] | None = None,
                         crude_messages: CrudeMessages | None = None,
                         nudge_depth: NudgeDepth | None = None,
                         content_depth: ContentDepth | None = None) -> None:
        given = (refresh_cadence, render_mode, crude_messages, nudge_depth, content_depth)
        writes = any(v is not None for v in given)
        name = "set_server_params" if writes else "server_params"
        if not await self.surface.guard(interaction, name, writes=writes):
            return
        params = await self.stm.admin.set_server_params(
            str(interaction.guild_id), refresh_cadence=refresh_cadence,
            render_mode=render_mode, crude_message_count=crude_messages,
            nudge_injection_depth=nudge_depth, content_injection_depth=content_depth,
            actor=actor_of(interaction))
        lines = [f"{label}: **{params.labels[key]}**" for key, label in PARAM_LABELS.items()]
        title = "Settings saved" if writes else "Current settings"
        await say(interaction, f"**{title}**\n" + "\n".join(lines))

    # -- /server stm prompt-edit -----------------------------------------------------
    @server_stm.command(name="prompt-edit", description="Edit the tool description and nudge")
    async def prompt_edit(self, interaction: discord.Interaction) -> None:
        if not await self.surface.guard(interaction, "set_prompts", writes=True):
            return
        prompts = await self.stm.admin.prompts(str(interaction.guild_id),
                                               actor=actor_of(interaction))
        await interaction.response.send_modal(views.PromptModal(self.stm, prompts))

    # -- /server stm categories-edit ---------------------------------------------------
    @server_stm.command(name="categories-edit", description="Edit the memory categories")
    async def categories_edit(self, interaction: discord.Interaction) -> None:
        if not await self.surface.guard(interaction, "set_categories", writes=True):
            return
        current = await self.stm.admin.categories(str(interaction.guild_id),
                                                  actor=actor_of(interaction))
        slots = min(self.stm.settings.max_categories, 5)
        await interaction.response.send_modal(views.CategoriesModal(self.stm, current, slots))

    # -- /server stm privacy-bypass -----------------------------------------------------
    @server_stm.command(name="privacy-bypass", description="Toggle the privacy bypass")
    async def privacy_bypass(self, interaction: discord.Interaction) -> None:
        if not await self.surface.guard(interaction, "set_privacy_bypass", writes=True):
            return
        server, actor = str(interaction.guild_id), actor_of(interaction)
        current = await self.stm.admin.privacy(server, actor=actor)
        changed = await self.stm.admin.set_privacy_bypass(
            server, bypass=not current.privacy_bypass, actor=actor)
        if changed.privacy_bypass:
            embed = discord.Embed(title="Privacy bypass enabled", colour=discord.Colour.orange(),
                                  description="Warning: memories of private channels now show "
                                              "in every channel of this server.")
        else:
            embed = discord.Embed(title="Privacy bypass disabled", colour=discord.Colour.green(),
                                  description="Private channels stay private again.")
        await say(interaction, embed=embed)

    # -- /server private-channels --------------------------------------------------------
    @server.command(name="private-channels", description="Choose the private channels")
    async def private_channels(self, interaction: discord.Interaction) -> None:
        if not await self.surface.guard(interaction, "set_private_channels", writes=True):
            return
        guild = interaction.guild
        assert guild is not None
        privacy = await self.stm.admin.privacy(str(guild.id), actor=actor_of(interaction))
        view = views.PrivateChannels(self.stm, guild, set(privacy.private_channel_ids))
        await say(interaction, view.summary(), view=view)

    # -- /capabilities manage ------------------------------------------------------------
    @capabilities.command(name="manage", description="Turn the bot's abilities on or off")
    async def capabilities_manage(self, interaction: discord.Interaction) -> None:
        if not await self.surface.guard(interaction, "set_stm_enabled", writes=True):
            return
        capability = await self.stm.admin.capability(str(interaction.guild_id),
                                                      actor=actor_of(interaction))
        view = views.Capabilities(self.stm, capability.stm_enabled)
        await say(interaction, view.summary(), view=view)

    # -- /persona stm edit / view --------------------------------------------------------
    @persona_stm.command(name="edit", description="Edit a persona's short-term memory here")
    async def persona_edit(self, interaction: discord.Interaction) -> None:
        if interaction.channel_id is None:
            await say(interaction, "This command needs a channel.")
            return
        in_guild = interaction.guild_id is not None
        if in_guild and not self.surface.allowed(interaction, "edit_memory", writes=True):
            await say(interaction, REFUSED)
            return
        picker = views.PersonaPicker(self.stm, self.surface.personas)
        await say(interaction, picker.prompt, view=picker)

    @persona_stm.command(name="view", description="What a persona remembers here")
    async def persona_view(self, interaction: discord.Interaction) -> None:
        embeds = await views.memory_embeds(self.stm, interaction, self.surface.personas)
        if not embeds:
            await say(interaction, "none")
            return
        for embed in embeds:
            await say(interaction, embed=embed)

    # -- /personal stm ---------------------------------------------------------------------
    @personal.command(name="stm", description="Your short-term memory settings")
    @app_commands.describe(setting="crossserver: toggle your cross-server memories; "
                                   "clear: delete your own memories")
    async def personal_stm(self, interaction: discord.Interaction,
                           setting: Literal["crossserver", "clear"]) -> None:
        user, actor = str(interaction.user.id), actor_of(interaction)
        if setting == "clear":
            cleared = await self.stm.admin.clear_user(user, actor=actor)
            await say(interaction, f"Cleared your short-term memories ({cleared.removed}).")
            return
        current = await self.stm.admin.user_opt_in(user, actor=actor)
        changed = await self.stm.admin.set_user_opt_in(
            user, opt_in=not current.crossserver_opt_in, actor=actor)
        state = "on" if changed.crossserver_opt_in else "off"
        await say(interaction, f"Cross-server memories are now **{state}** for you.")

    # -- /help stm ------------------------------------------------------------------------
    @help.command(name="stm", description="How the bot's short-term memory works")
    async def help_stm(self, interaction: discord.Interaction) -> None:
        await say(interaction, HELP)
