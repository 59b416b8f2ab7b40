"""The modals, pickers and toggles of the command surface (reference §11)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import discord

from stm_core import Stm
from stm_core.admin.memory import display_text
from stm_core.admin.values import (
    Capability,
    CategoryInfo,
    MemorySnapshot,
    ServerCategories,
    ServerPrompts,
)
from stm_discord.acting import Modal, View, actor_of
from stm_discord.mapping import Persona

#: Discord's limits of a modal's text input.
LABEL_MAX = 45
PLACEHOLDER_MAX = 100
#: A memory value, as the tool's (reference §11, ``/persona stm edit``).
VALUE_MAX = 1500
PROMPT_MAX = 4000
CATEGORY_LINE_MAX = 1000
#: Channels one page of ``/server private-channels`` lists (a select's limit).
PAGE = 25
CATEGORIES_TITLE = "Categories (saving clears shared memories)"


# -- /server stm prompt-edit -----------------------------------------------------------------
class PromptModal(Modal):
    """The tool description and the nudge, each prefilled with the override
    or the mode's default. An empty box, or the default left as it was,
    resets to the default (stored as NULL)."""

    def __init__(self, stm: Stm, prompts: ServerPrompts) -> None:
        super().__init__(title="Short-term memory prompts")
        self.stm = stm
        self.prompts = prompts
        self.tool: discord.ui.TextInput[PromptModal] = discord.ui.TextInput(
            label="Tool description", style=discord.TextStyle.paragraph, required=False,
            max_length=PROMPT_MAX, default=prompts.tool_description.text)
        self.nudge: discord.ui.TextInput[PromptModal] = discord.ui.TextInput(
            label="Nudge", style=discord.TextStyle.paragraph, required=False,
            max_length=PROMPT_MAX, default=prompts.nudge.text)
        self.add_item(self.tool)
        self.add_item(self.nudge)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        def typed(box: discord.ui.TextInput[PromptModal], default: str) -> str:
            text = box.value.strip()
            return "" if text == default.strip() else text

        p = self.prompts
        saved = await self.stm.admin.set_prompts(
            p.server_id,
            tool_description=typed(self.tool, p.tool_description.text
                                   if p.tool_description.is_default else ""),
            nudge=typed(self.nudge, p.nudge.text if p.nudge.is_default else ""),
            actor=actor_of(interaction))
        custom = sum(not t.is_default for t in (saved.tool_description, saved.nudge))
        await interaction.response.send_message(
            f"Prompts saved: {custom} custom, {2 - custom} default.", ephemeral=True)


# -- /server stm categories-edit --------------------------------------------------------------
class CategoriesModal(Modal):
    """``label: description`` per slot; one bad slot rejects the whole submit."""

    def __init__(self, stm: Stm, current: ServerCategories, slots: int) -> None:
        super().__init__(title=CATEGORIES_TITLE)
        self.stm = stm
        self.server_id = current.server_id
        stored = () if current.is_default else current.categories
        self.slots: list[discord.ui.TextInput[CategoriesModal]] = []
        for number in range(slots):
            info = stored[number] if number < len(stored) else None
            box: discord.ui.TextInput[CategoriesModal] = discord.ui.TextInput(
                label=f"Category {number + 1}", style=discord.TextStyle.paragraph,
                required=False, max_length=CATEGORY_LINE_MAX,
                placeholder="label: description (saving clears the server's shared memories)",
                default=f"{info.label}: {info.description}" if info else None)
            self.slots.append(box)
            self.add_item(box)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        saved = await self.stm.admin.set_categories(
            self.server_id, [box.value for box in self.slots], actor=actor_of(interaction))
        listed = "\n".join(f"• **{c.label}**: {c.description}" for c in saved.categories)
        await interaction.response.send_message(
            f"Categories saved ({saved.cleared_memories} shared memories cleared):\n{listed}",
            ephemeral=True)


# -- /persona stm edit --------------------------------------------------------------------------
class PersonaPicker(View):
    """Pick a persona, then edit its memory in a modal; the picker comes back
    after each save, so several personas can be edited in one go."""

    prompt = "Whose short-term memory in this channel do you want to edit?"

    def __init__(self, stm: Stm, personas: Sequence[Persona]) -> None:
        super().__init__(timeout=600)
        self.stm = stm
        self.personas = {p.id: p for p in personas}
        select: discord.ui.Select[PersonaPicker] = discord.ui.Select(
            custom_id="stm-persona-pick", placeholder="Persona",
            options=[discord.SelectOption(label=p.name, value=p.id) for p in personas])
        select.callback = self.picked  # type: ignore[method-assign]
        self.select = select
        self.add_item(select)

    async def picked(self, interaction: discord.Interaction) -> None:
        persona = self.personas[self.select.values[0]]
        # Awaited pre-warm: the modal shows what is stored, so a cold cache
        # cannot make a save wipe the memory.
        place = Place.of(interaction)
        snapshot = await self.stm.admin.view_memory(
            channel_id=place.channel_id, persona_id=persona.id, server_id=place.server_id,
            user_id=place.user_id)
        infos = await _categories(self.stm, interaction)
        await interaction.response.send_modal(
            MemoryModal(self.stm, persona, snapshot, infos, picker=self))


@attrs.frozen(kw_only=True)
class Place:
    """Where a command runs: the live row is the server's in a guild, the
    user's in a DM (and in a guild, ``user_id`` is the editor's own copy)."""

    channel_id: str
    server_id: str | None
    user_id: str

    @classmethod
    def of(cls, interaction: discord.Interaction) -> Place:
        guild = interaction.guild_id
        return cls(channel_id=str(interaction.channel_id),
                   server_id=str(guild) if guild is not None else None,
                   user_id=str(interaction.user.id))


async def _categories(stm: Stm, interaction: discord.Interaction) -> tuple[CategoryInfo, ...]:
    """The server's categories, or ``()`` in summary mode (and in a DM)."""
    if interaction.guild_id is None:
        return ()
    found = await stm.admin.categories(str(interaction.guild_id))
    return found.categories if found.mode == "category" else ()


def input_label(label: str) -> str:
    return (label[:1].upper() + label[1:])[:LABEL_MAX]


class MemoryModal(Modal):
    """One input per category (or the summary), prefilled with what is stored."""

    def __init__(self, stm: Stm, persona: Persona, snapshot: MemorySnapshot,
                 infos: tuple[CategoryInfo, ...], *, picker: PersonaPicker) -> None:
        super().__init__(title=f"{persona.name}'s memory here"[:LABEL_MAX])
        self.stm = stm
        self.persona = persona
        self.picker = picker
        stored = {s.slug: s.text for s in snapshot.sections}
        self.boxes: dict[str, discord.ui.TextInput[MemoryModal]] = {}
        fields = ([(i.slug, i.label, i.description) for i in infos] if infos
                  else [("summary", "Summary", "What the persona remembers of this channel")])
        for slug, label, description in fields:
            box: discord.ui.TextInput[MemoryModal] = discord.ui.TextInput(
                label=input_label(label), placeholder=description[:PLACEHOLDER_MAX],
                style=discord.TextStyle.paragraph, required=False, max_length=VALUE_MAX,
                default=stored.get(slug) or None)
            self.boxes[slug] = box
            self.add_item(box)
        self.category_mode = bool(infos)

    async def on_submit(self, interaction: discord.Interaction) -> None:
        place = Place.of(interaction)
        values = {slug: box.value for slug, box in self.boxes.items()}
        await self.stm.admin.edit_memory(
            channel_id=place.channel_id, persona_id=self.persona.id,
            server_id=place.server_id, user_id=place.user_id, actor=actor_of(interaction),
            categories=values if self.category_mode else None,
            summary=None if self.category_mode else values["summary"])
        picker = PersonaPicker(self.stm, list(self.picker.personas.values()))
        await interaction.response.send_message(
            f"Saved {self.persona.name}'s memory. {picker.prompt}", view=picker, ephemeral=True)


# -- /persona stm view ----------------------------------------------------------------------------
SCOPE_NOTES = {"server": "Shared memory of this channel (everyone here sees it in the bot).",
               "dm": "The memory of your direct messages with the bot."}


async def memory_embeds(stm: Stm, interaction: discord.Interaction,
                        personas: Sequence[Persona]) -> list[discord.Embed]:
    """One embed per persona with a memory here (summary or categories)."""
    place = Place.of(interaction)
    actor = actor_of(interaction)
    listed = await stm.admin.list_personas(channel_id=place.channel_id,
                                           server_id=place.server_id, user_id=place.user_id,
                                           actor=actor)
    names = {p.id: p.name for p in personas}
    embeds = []
    for found in listed:
        if found.mode_hint == "lines" or not found.persona_id:
            continue
        snapshot = await stm.admin.view_memory(
            channel_id=place.channel_id, persona_id=found.persona_id,
            server_id=place.server_id, user_id=place.user_id, actor=actor)
        name = names.get(found.persona_id, f"Persona {found.persona_id}")
        embeds.append(discord.Embed(description=(
            f"**{name}**\n*{SCOPE_NOTES[snapshot.scope]}*\n\n{view_text(snapshot)}")))
    return embeds


def view_text(snapshot: MemorySnapshot) -> str:
    """Summary mode: the summary; category mode: each label in bold, the value
    under it, blank lines between. stm's display rule cuts it at 3,800
    characters with a notice."""
    bold = tuple(attrs.evolve(s, label=f"**{s.label}**") for s in snapshot.sections)
    return display_text(bold, snapshot.mode)[0]


# -- /capabilities manage -------------------------------------------------------------------------
class Capabilities(View):
    """The "Short-Term Memory" checkbox."""

    def __init__(self, stm: Stm, enabled: bool) -> None:
        super().__init__(timeout=600)
        self.stm = stm
        self.enabled = enabled
        self.toggle = discord.ui.Button[Capabilities](custom_id="stm-capability-toggle")
        self.toggle.callback = self.clicked  # type: ignore[method-assign]
        self.add_item(self.toggle)
        self._paint()

    def _paint(self) -> None:
        self.toggle.label = f"{'☑' if self.enabled else '☐'} Short-Term Memory"
        self.toggle.style = (discord.ButtonStyle.success if self.enabled
                             else discord.ButtonStyle.secondary)

    def summary(self) -> str:
        return (f"Short-Term Memory is **{'on' if self.enabled else 'off'}**. When off, the "
                "bot neither offers its memory tool nor nudges; memories still show.")

    async def clicked(self, interaction: discord.Interaction) -> None:
        assert interaction.guild_id is not None
        changed: Capability = await self.stm.admin.set_stm_enabled(
            str(interaction.guild_id), enabled=not self.enabled, actor=actor_of(interaction))
        self.enabled = changed.stm_enabled
        self._paint()
        await interaction.response.edit_message(content=self.summary(), view=self)


# -- /server private-channels ----------------------------------------------------------------------
class PrivateChannels(View):
    """Pages of 25 text channels; what is picked on a page is private."""

    def __init__(self, stm: Stm, guild: discord.Guild, private: set[str]) -> None:
        super().__init__(timeout=600)
        self.stm = stm
        self.guild_id = str(guild.id)
        self.channels = sorted(guild.text_channels, key=lambda c: c.position)
        self.names = {str(c.id): c.name for c in self.channels}
        self.private = private
        self.page = 0
        self._build()

    def _build(self) -> None:
        self.clear_items()
        shown = self.channels[self.page * PAGE:(self.page + 1) * PAGE]
        select: discord.ui.Select[PrivateChannels] = discord.ui.Select(
            custom_id="stm-private-channels", placeholder="Private channels",
            min_values=0, max_values=max(len(shown), 1), options=[
                discord.SelectOption(label=c.name[:100], value=str(c.id),
                                     default=str(c.id) in self.private) for c in shown]
            or [discord.SelectOption(label="(no text channels)", value="none")])
        select.callback = self.picked  # type: ignore[method-assign]
        self.select = select
        self.add_item(select)
        if len(self.channels) > PAGE:
            for label, step in (("Previous", -1), ("Next", 1)):
                button = discord.ui.Button[PrivateChannels](
                    label=label, custom_id=f"stm-private-{label.lower()}")
                button.callback = self._turner(step)  # type: ignore[method-assign]
                self.add_item(button)

    def _turner(self, step: int):  # type: ignore[no-untyped-def]
        async def turn(interaction: discord.Interaction) -> None:
            pages = (len(self.channels) + PAGE - 1) // PAGE
            self.page = (self.page + step) % pages
            self._build()
            await interaction.response.edit_message(content=self.summary(), view=self)
        return turn

    def summary(self) -> str:
        names = sorted(f"#{self.names.get(c, c)}" for c in self.private)
        return "Private channels: " + (", ".join(names) if names else "none")

    async def picked(self, interaction: discord.Interaction) -> None:
        page_ids = {o.value for o in self.select.options}
        chosen = set(self.select.values) - {"none"}
        wanted = (self.private - page_ids) | chosen
        saved = await self.stm.admin.set_private_channels(
            self.guild_id, channel_ids=sorted(wanted), actor=actor_of(interaction))
        self.private = set(saved.private_channel_ids)
        self._build()
        await interaction.response.edit_message(content=self.summary(), view=self)
