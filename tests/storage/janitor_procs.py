"""Child processes of the janitor tests: ``python -m tests.storage.janitor_procs MODE URL ...``.

``write URL TAG TURNS``: writes ``TURNS`` captures on channels ``TAG-0..TAG-19``
of server ``live``, printing ``ready`` first and ``done N`` at the end.

``janitor URL``: runs the janitor once in small batches, printing ``batch N``
(the running total) after each one and ``done N`` at the end; the kill test
kills it in between.

Both use the system clock, so their rows are fresh and the seeded ones are not.
"""

from __future__ import annotations

import asyncio
import sys

from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import open_store

LIVE_SERVER = "live"
CHANNELS_PER_WRITER = 20
#: Small, quick batches: many of them, so a kill lands between two.
JANITOR_SETTINGS = Settings(janitor_batch_size=20, janitor_pause_ms=5)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def live_key(tag: str, n: int) -> MemoryKey:
    return MemoryKey.server(LIVE_SERVER, f"{tag}-{n % CHANNELS_PER_WRITER}", None)


async def write(url: str, tag: str, turns: int) -> None:
    async with open_store(url, settings=Settings(), load_entrypoints=False) as stm:
        say("ready")
        for n in range(turns):
            await stm.capture([CaptureWrite(key=live_key(tag, n), messages=(),
                                            now_ms=stm.clock.now_ms(), counter_increment=1)])
        say(f"done {turns}")


async def janitor(url: str) -> None:
    async with open_store(url, settings=JANITOR_SETTINGS, load_entrypoints=False) as stm:
        say("ready")
        total = await stm.janitor.run_once(progress=lambda done: say(f"batch {done}"))
        say(f"done {total}")


if __name__ == "__main__":
    mode, url, *rest = sys.argv[1:]
    if mode == "write":
        asyncio.run(write(url, rest[0], int(rest[1])))
    else:
        asyncio.run(janitor(url))
