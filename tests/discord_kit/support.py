"""Helpers of the kit's tests: talk to the bot, wait for what it recorded."""

from __future__ import annotations

import asyncio

from stm_discord.testing.fake_discord import User
from stm_discord.testing.world import BOT, DM, Running


async def ask(run: Running, channel: int, who: User, text: str, count: int) -> str:
    """Say ``text`` to the bot; the bot's ``count``-th message in the channel."""
    mention = [] if channel == DM else [BOT]
    prefix = "" if channel == DM else "<@99> "
    await run.fake.say(channel, who, prefix + text, mentions=mention)
    return (await run.fake.messages_in(channel, count))[-1].content


async def stored_lines(run: Running, channel: int, *, count: int) -> list[str]:
    """The channel's stored lines, once there are ``count`` (recording follows the reply)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while loop.time() < deadline:
        snap = await run.stm.admin.view_memory(channel_id=str(channel), persona_id="1",
                                               server_id="7")
        if len(snap.messages) >= count:
            return [m.content for m in snap.messages]
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {count} lines stored after 10 s")
