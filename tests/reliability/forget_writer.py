"""A bot process recording turns while a user is forgotten elsewhere:
``python -m tests.reliability.forget_writer URL TAG TURNS CHANNELS [IDS]``.

It warms its cache (reporting whether builds show the forgotten user's
words), waits for a line on stdin, then records ``TURNS`` turns of its own
users (``w-TAG-*``) in random channels ``c0..c{CHANNELS-1}`` of server ``G``
(every line carries its author id; none is by the forgotten user), then
reports every window it wrote, per channel. With ``IDS`` ``trigger``, the
newest line (the triggering message, marked ``is_trigger``) carries none, as
from a host that does not pass them: stm attributes it to the turn's user. With ``IDS`` ``tool``,
every fourth turn also writes the channel's summary through the tool (a new
revision naming nobody).
After that it answers ``check`` on stdin: it builds a turn's context in every
channel from its (warm, listening) cache and reports whether any text holds a
word of the forgotten user.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from typing import Any

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import open_store

SERVER = "G"
#: The forgotten user's words, and their name in the model's summaries.
FORGOTTEN_WORDS = ("x-secret", "Xena")


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def main(url: str, tag: str, turns: int, channels: int, ids: str) -> None:
    rng = random.Random(tag)
    windows: dict[str, list[list[str]]] = {}
    async with open_store(url, load_entrypoints=False) as stm:
        # Fill the cache with the old rows, then wait for the others.
        say(event="warm", showed_forgotten=await shows_forgotten(stm, channels))
        sys.stdin.readline()
        for i in range(turns):
            channel = f"c{rng.randrange(channels)}"
            user = f"w-{tag}-{i % 3}"
            history = [HistoryMessage(author_type="user", content=f"{tag}-{i}-{n}",
                                      author_id=None if ids == "trigger" and n == 1 else user,
                                      speaker_name=user, is_trigger=n == 1)
                       for n in range(2)]
            turn = Turn(user_id=user, channel_id=channel, server_id=SERVER, persona_id="p",
                        triggerer_name=user, provider="openai")
            if ids == "tool" and i % 4 == 0:  # the model rewrites the summary too
                result = await stm.apply_tool_call(turn, {"summary": f"{tag}-{i} notes"})
                assert result.ok, result
            await stm.record_turn(
                turn, history, [PersonaResponse(content=f"re {tag}-{i}", persona_name="Bot",
                                                persona_id="p")])
            windows.setdefault(channel, []).append([m.content for m in history]
                                                   + [f"re {tag}-{i}"])
        say(event="done", windows=windows)
        for line in sys.stdin:
            if line.strip() != "check":
                break
            say(event="seen", found=await sees_forgotten(stm, channels))


async def shows_forgotten(stm: Any, channels: int) -> bool:
    """Whether a build in any channel shows a word or the name of the forgotten user."""
    found = False
    for c in range(channels):
        ctx = await stm.build_context(Turn(user_id="reader", channel_id=f"c{c}",
                                           server_id=SERVER, persona_id="p", has_tools=False))
        found = found or any(word in item.text for item in ctx.memory_items
                             for word in FORGOTTEN_WORDS)
    return found


async def sees_forgotten(stm: Any, channels: int) -> bool:
    """:func:`shows_forgotten`, retried for a few seconds: other processes'
    change notices arrive asynchronously."""
    deadline = time.monotonic() + 5
    while (found := await shows_forgotten(stm, channels)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return found


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                     sys.argv[5] if len(sys.argv) > 5 else "all"))
