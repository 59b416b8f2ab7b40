"""Discord's objects as stm's: the turn of a message, and its history window.

* a guild channel is ``channel_id`` with ``server_id``; a thread is its own
  channel with ``parent_channel_id`` (so it inherits its parent's privacy); a
  DM has no ``server_id``;
* every line carries its author's id; the bot's own lines are the persona's;
  the triggering message is marked ``is_trigger``;
* mentions stay as Discord writes them in stored text (``<@id>``, ``<#id>``);
  the turn carries the names, and stm's Discord mention converter turns them
  into names wherever stm renders them. The dialogue the model sees goes
  through the same converter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import discord

from stm_core import HistoryMessage, Turn, ValidationError
from stm_core._util import arguments
from stm_plugins.discord_mentions import convert_discord_mentions


def _persona_id(value: str | int) -> str:
    ident = arguments.to_id(value, "persona.id")
    if not ident.strip():
        raise ValidationError("a persona id must not be blank", field="persona.id",
                              allowed="a non-blank id")
    return ident


def _persona_name(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"a persona name must be non-blank text, got {value!r}",
                              field="persona.name", allowed="non-blank text")


@attrs.frozen(kw_only=True)
class Persona:
    """Who the bot speaks as: stm keeps one memory per persona per channel."""

    id: str = attrs.field(converter=_persona_id)
    name: str = attrs.field(validator=_persona_name)


def turn_for(message: discord.Message, persona: Persona, *, provider: str,
             window: Sequence[discord.Message] = ()) -> Turn:
    """The :class:`Turn` of a message that the bot answers as ``persona``."""
    channel = message.channel
    guild = message.guild
    parent_id = channel.parent_id if isinstance(channel, discord.Thread) else None
    user_names = {str(m.author.id): m.author.display_name for m in window}
    for m in (*window, message):
        user_names.update({str(u.id): u.display_name for u in m.mentions})
    user_names[str(message.author.id)] = message.author.display_name
    channel_names: dict[str, str] = {}
    thread_ids: list[str] = []
    role_names: dict[str, str] = {}
    if guild is not None:
        channel_names = {str(c.id): c.name for c in guild.channels}
        for thread in guild.threads:
            channel_names[str(thread.id)] = thread.name
            thread_ids.append(str(thread.id))
        role_names = {str(r.id): r.name for r in guild.roles if not r.is_default()}
    return Turn(
        user_id=message.author.id, channel_id=channel.id,
        server_id=guild.id if guild is not None else None,
        parent_channel_id=parent_id, persona_id=persona.id, persona_lineage_id=persona.id,
        bot_name=persona.name, triggerer_name=message.author.display_name,
        provider=provider, server_name=guild.name if guild is not None else None,
        channel_name=getattr(channel, "name", None), user_names=user_names,
        channel_names=channel_names, role_names=role_names, thread_ids=thread_ids)


def history_line(message: discord.Message, *, bot_user_id: int, persona: Persona,
                 trigger_id: int) -> HistoryMessage:
    """One line of the window: the bot's own lines are the persona's."""
    own = message.author.id == bot_user_id
    return HistoryMessage(
        author_type="persona" if own else "user", content=line_text(message),
        speaker_name=persona.name if own else message.author.display_name,
        author_id=persona.id if own else message.author.id,
        is_trigger=message.id == trigger_id)


def line_text(message: discord.Message) -> str:
    """The message as a line: whom it replies to, its text, its attachments."""
    parts = []
    ref = message.reference
    if ref is not None and isinstance(ref.resolved, discord.Message):
        parts.append(f"(replying to {ref.resolved.author.display_name})")
    if message.content:
        parts.append(message.content)
    parts += [f"[attachment: {a.filename}]" for a in message.attachments]
    return " ".join(parts) or "(no text)"


def window_lines(messages: Iterable[discord.Message], *, bot_user_id: int, persona: Persona,
                 trigger_id: int) -> list[HistoryMessage]:
    return [history_line(m, bot_user_id=bot_user_id, persona=persona, trigger_id=trigger_id)
            for m in messages]


def as_dialogue(window: Sequence[HistoryMessage], turn: Turn) -> list[dict[str, Any]]:
    """The window as Chat Completions messages, mentions read as names. User
    lines are prefixed with their speaker, since a channel has many."""
    dialogue = []
    for line in window:
        text = convert_discord_mentions(line.content, turn)
        if line.author_type == "persona":
            dialogue.append({"role": "assistant", "content": text})
        else:
            dialogue.append({"role": "user", "content": f"{line.speaker_name}: {text}"})
    return dialogue
