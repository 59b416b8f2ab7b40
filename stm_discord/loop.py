"""The message loop: a cog that answers with stm's memory and records each turn.

When the bot is mentioned, replied to, or written to in a DM, the turn is:
read the window from the channel's history, build stm's context, call the
model with stm's tool offered, apply its tool calls, send the reply (split
over 2,000 characters), record the window and the reply.

A turn is never lost when something fails:

* **the model fails** (an error, or no answer within ``model_timeout``
  seconds): the bot sends
  ``failure_reply`` instead, and the turn is recorded with it, so the user's
  line is kept; tool calls applied before the failure stay applied;
* **Discord refuses the channel's history**: the lines stm kept of the
  channel stand in for it;
* **Discord refuses the reply**: the turn is recorded all the same, with the
  reply the model gave (it may have written its memory from it);
* **recording fails** (the database is away): it is logged; the next turn
  records its whole window, this turn's lines included.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import discord
from discord.ext import commands

from stm_core import TOOL_NAME, HistoryMessage, PersonaResponse, Stm, Turn, ValidationError
from stm_core.inject import inject
from stm_discord.mapping import Persona, as_dialogue, turn_for, window_lines
from stm_discord.model import ChatModel
from stm_discord.replies import split_reply

log = logging.getLogger("stm.discord")

#: What the bot says when the model could not answer.
FAILURE_REPLY = "Sorry, I could not think of an answer just now. Please try again."
#: Messages of the channel the model sees, the triggering one included.
WINDOW = 20
#: Whom a reply may ping: the users it names, never everyone or a role (what
#: the model writes may come from what users wrote).
MENTIONS = discord.AllowedMentions(everyone=False, roles=False, users=True,
                                   replied_user=False)
#: Seconds a turn waits for the model (its tool calls included).
MODEL_TIMEOUT = 120.0


class StmChat(commands.Cog):
    """Answers as ``personas[0]`` with stm's short-term memory."""

    def __init__(self, bot: commands.Bot, stm: Stm, model: ChatModel, *,
                 personas: Sequence[Persona], window: int = WINDOW,
                 failure_reply: str = FAILURE_REPLY,
                 model_timeout: float = MODEL_TIMEOUT) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= 100:
            raise ValidationError(f"window must be an integer from 1 to 100, got {window!r}",
                                  field="window", allowed="an integer from 1 to 100")
        if not isinstance(failure_reply, str) or not failure_reply.strip():
            raise ValidationError("failure_reply must be non-blank text",
                                  field="failure_reply", allowed="non-blank text")
        if (isinstance(model_timeout, bool) or not isinstance(model_timeout, int | float)
                or not 0 < model_timeout <= 3600):
            raise ValidationError(f"model_timeout must be seconds from 0 to 3600, got "
                                  f"{model_timeout!r}", field="model_timeout",
                                  allowed="a number of seconds, more than 0, at most 3600")
        self.model_timeout = float(model_timeout)
        self.bot = bot
        self.stm = stm
        self.model = model
        self.persona = personas[0]
        self.window = window
        self.failure_reply = failure_reply

    def addressed(self, message: discord.Message) -> bool:
        """A DM, a mention of the bot, or a reply to one of its messages."""
        me = self.bot.user
        if me is None or message.author.bot:
            return False
        if message.guild is None:
            return True
        if me in message.mentions:
            return True
        ref = message.reference
        resolved = ref.resolved if ref is not None else None
        return isinstance(resolved, discord.Message) and resolved.author.id == me.id

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if self.addressed(message):
            await self.answer(message)

    async def answer(self, message: discord.Message) -> None:
        me = self.bot.user
        assert me is not None
        earlier = await self.earlier(message)
        seen = [*(earlier or []), message]
        turn = turn_for(message, self.persona, provider=self.model.key, window=seen)
        window = window_lines(seen, bot_user_id=me.id, persona=self.persona,
                              trigger_id=message.id)
        if earlier is None:  # Discord would not say: the lines stm kept stand in
            window = [*await self.kept_lines(turn), *window]
        try:
            reply = await asyncio.wait_for(self.think(turn, as_dialogue(window, turn)),
                                           self.model_timeout)
        except Exception:
            log.exception("the model failed in channel %s", message.channel.id)
            reply = self.failure_reply
        reply = reply.strip() or self.failure_reply
        try:
            for part in split_reply(reply):
                await message.channel.send(part, allowed_mentions=MENTIONS)
        except discord.HTTPException:
            log.exception("Discord refused the reply in channel %s", message.channel.id)
        try:
            await self.stm.record_window(turn, window, [PersonaResponse(
                content=reply, persona_name=self.persona.name, persona_id=self.persona.id,
                persona_lineage_id=self.persona.id)])
        except Exception:
            log.exception("recording the turn failed in channel %s", message.channel.id)

    async def earlier(self, message: discord.Message) -> list[discord.Message] | None:
        """The messages before ``message`` the model sees, oldest first, or
        ``None`` when Discord will not say."""
        if self.window == 1:
            return []
        try:
            found = [m async for m in message.channel.history(limit=self.window - 1,
                                                              before=message)]
        except discord.HTTPException:
            log.exception("Discord refused the history of channel %s", message.channel.id)
            return None
        return found[::-1]

    async def kept_lines(self, turn: Turn) -> list[HistoryMessage]:
        """The channel's lines as stm keeps them (recording the turn replaces
        them with its window, so they go in it)."""
        try:
            snapshot = await self.stm.admin.view_memory(
                channel_id=turn.channel_id, persona_id=self.persona.id,
                server_id=turn.server_id, user_id=turn.user_id)
        except Exception:
            log.exception("reading the kept lines failed in channel %s", turn.channel_id)
            return []
        return [HistoryMessage(author_type="user" if m.role == "user" else "persona",
                               content=m.content, speaker_name=m.speaker_name,
                               author_id=m.author_id) for m in snapshot.messages]

    async def think(self, turn: Turn, dialogue: list[dict[str, Any]]) -> str:
        """Build the context, call the model with the tool offered, apply its calls."""
        ctx = await self.stm.build_context(turn)
        schema = await self.stm.tool_schema(turn, "openai")

        async def run_tool(name: str, arguments: Any) -> str:
            if name != TOOL_NAME:
                return f"unknown tool {name}"
            return (await self.stm.apply_tool_call(turn, arguments)).message

        return await self.model.reply(inject(dialogue, ctx), [schema] if schema else [],
                                      run_tool)
