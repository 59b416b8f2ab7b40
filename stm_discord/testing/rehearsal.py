"""A bot's rehearsal, offline: its own ``main`` against the loopback fake.

``rehearse(main)`` starts a fake Discord (two channels, a thread, a DM, an
admin and a member), points discord.py at it, runs the bot's
``main(token, model)`` with a scripted model, replays a scripted server and
prints what the bot sent. ``make discord-demo`` runs the example bot so.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from rich.console import Console
from rich.panel import Panel

from stm_discord.model import ChatModel
from stm_discord.testing.fake_discord import FakeDiscord, Sent, User
from stm_discord.testing.scripted_model import ScriptedModel
from stm_discord.testing.world import (
    ALICE,
    ART_CLUB,
    BOB,
    BOT,
    DM,
    GENERAL,
    PLANS,
    SECRETS,
    fake_discord,
)

Main = Callable[[str, ChatModel], Coroutine[Any, Any, None]]
NAMES = {GENERAL.id: "#general", SECRETS.id: "#secrets", PLANS.id: "#plans (thread)",
         DM: "DM"}


class Stage:
    """The fake and a console: each step prints what a person did and what the bot sent."""

    def __init__(self, fake: FakeDiscord, console: Console) -> None:
        self.fake = fake
        self.console = console

    def _who(self, user: User) -> str:
        return f"{user.name} ({'admin' if user is ALICE else 'member'})"

    def _show(self, sent: Sent) -> None:
        mark = "[dim](only you can see this)[/dim] " if sent.ephemeral else ""
        if sent.modal is not None:
            labels = ", ".join(_labels(sent.modal))
            self.console.print(f"   [green]↳ modal[/green] “{sent.modal['title']}”: {labels}")
            return
        text = (sent.text or "(buttons updated)").replace("\n", "\n     ")
        self.console.print(f"   [green]↳ {BOT.name}:[/green] {mark}{text}", highlight=False)

    async def say(self, channel: int, user: User, text: str) -> None:
        where = NAMES[channel]
        self.console.print(f"[bold]{where}[/bold] {user.name}: {text}", highlight=False)
        before = len([s for s in self.fake.sent if s.kind == "message"
                      and s.channel_id == channel])
        content = text if channel == DM else f"<@{BOT.id}> {text}"
        await self.fake.say(channel, user, content, mentions=[] if channel == DM else [BOT])
        for sent in (await self.fake.messages_in(channel, before + 1))[before:]:
            self._show(sent)

    async def slash(self, channel: int, user: User, path: str, **options: Any) -> Sent:
        shown = " ".join(f"{k.replace('_', '-')}:{v}" for k, v in options.items())
        self.console.print(f"[bold]{NAMES[channel]}[/bold] {self._who(user)} runs "
                           f"[cyan]/{path}[/cyan] {shown}".rstrip(), highlight=False)
        sent = await self.fake.slash(channel, user, path, **options)
        self._show(sent)
        return sent

    async def click(self, on: Sent, user: User, custom_id: str, what: str,
                    values: list[str] | None = None) -> Sent:
        self.console.print(f"   {self._who(user)} {what}", highlight=False)
        sent = await self.fake.click(on, user, custom_id, values=values)
        self._show(sent)
        return sent

    async def submit(self, opened: Sent, user: User, values: dict[str, str]) -> Sent:
        filled = "; ".join(f"{k}: {v!r}" for k, v in values.items())
        self.console.print(f"   {self._who(user)} submits {filled}", highlight=False)
        sent = await self.fake.submit_modal(opened, user, values)
        self._show(sent)
        return sent


def _labels(modal: dict[str, Any]) -> list[str]:
    found = []
    stack = list(modal["components"])
    while stack:
        item = stack.pop(0)
        if item.get("type") == 4 and item.get("label"):
            found.append(item["label"])
        if item.get("type") == 18:
            found.append(item["label"])
        stack += item.get("components") or []
    return found


async def script(stage: Stage) -> None:
    """The scripted server: a conversation, a thread, privacy, commands, a DM."""
    await stage.say(GENERAL.id, ALICE, "please remember we paint the mural on Saturday")
    await stage.say(GENERAL.id, BOB, "what's the plan?")
    await stage.say(PLANS.id, ALICE, "remember the surprise party for Bob is on Friday")
    await stage.slash(GENERAL.id, BOB, "server private-channels")
    listing = await stage.slash(GENERAL.id, ALICE, "server private-channels")
    await stage.click(listing, ALICE, "stm-private-channels", "ticks #secrets",
                      values=[str(SECRETS.id)])
    await stage.say(GENERAL.id, BOB, "anything else going on?")
    await stage.slash(GENERAL.id, BOB, "server stm parameters", refresh_cadence=3)
    await stage.slash(GENERAL.id, ALICE, "server stm parameters", refresh_cadence=3)
    await stage.slash(GENERAL.id, BOB, "persona stm view")
    picker = await stage.slash(GENERAL.id, ALICE, "persona stm edit")
    opened = await stage.click(picker, ALICE, "stm-persona-pick", "picks Tomori",
                               values=["1"])
    await stage.submit(opened, ALICE, {"Summary": "The mural is on Saturday, 10am."})
    await stage.say(DM, BOB, "remember I like pastels")
    await stage.say(DM, BOB, "what colours do I like?")
    toggles = await stage.slash(GENERAL.id, ALICE, "capabilities manage")
    await stage.click(toggles, ALICE, "stm-capability-toggle", "unticks Short-Term Memory")


async def rehearse(main: Main, *, console: Console | None = None) -> None:
    """Run ``main`` offline against the fake and replay :func:`script`."""
    console = console or Console(highlight=False)
    console.print(Panel(
        f"{ART_CLUB.name}: #general, #secrets and its thread #plans; Alice (admin, "
        "Manage Server) and Bob (member); a DM with Bob.\nThe bot is the example's own "
        "code, with discord.py's real client talking to a fake Discord on 127.0.0.1 and "
        "a scripted model behind the OpenAI SDK's real client.",
        title="An offline Discord server", expand=False))
    model = ScriptedModel()
    async with fake_discord() as fake:
        bot = asyncio.create_task(main("offline-token", model.router()))
        try:
            await fake.wait_ready(timeout=30)
            await script(Stage(fake, console))
        finally:
            bot.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await bot
