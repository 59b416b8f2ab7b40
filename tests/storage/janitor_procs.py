"""Child processes of the janitor tests: ``python -m tests.storage.janitor_procs MODE URL ...``.

``write URL TAG TURNS``: writes ``TURNS`` captures on channels ``TAG-0..TAG-19``
of server ``live``, printing ``ready`` first and ``done N`` at the end.

``janitor URL``: runs the janitor once in small batches, printing ``batch N``
(the running total) after each one and ``done N`` at the end; the kill test
kills it in between.

``sliced-janitor URL``: the janitor on SQLite with its default batches cut
into 5-row slices, printing ``slice N`` (rows deleted so far in the batch)
from the writer thread after each slice and pausing there: a kill lands
inside a batch, between two of its ``DELETE``s.

``STM_TEST_PURGE_SLICE_ROWS``, when set, replaces SQLite's slice size;
``STM_TEST_PURGE_GIVE_WAY=1`` makes every batch give way after its first
slice, as if a turn write were always waiting.

Both use the system clock, so their rows are fresh and the seeded ones are not.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import open_store
from stm_plugins.sqlalchemy_storage import sqlite_adapter, sqlite_purge

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
            await stm.engine.capture([CaptureWrite(key=live_key(tag, n), messages=(),
                                            now_ms=stm.clock.now_ms(), counter_increment=1)])
        say(f"done {turns}")


async def janitor(url: str) -> None:
    async with open_store(url, settings=JANITOR_SETTINGS, load_entrypoints=False) as stm:
        say("ready")
        total = await stm.janitor.run_once(progress=lambda done: say(f"batch {done}"))
        say(f"done {total}")


async def sliced_janitor(url: str) -> None:
    sqlite_purge.SLICE_ROWS = 5
    sqlite_purge.YIELD_AFTER_S = 0.0  # asks after every slice whether a write waits
    sliced = sqlite_purge.purge_in_slices

    def slow(conn: Any, compiled: Any, params: dict[str, Any],
             waiting: Callable[[], int]) -> sqlite_purge.SlicedPurge:
        deleted = 0

        def after_a_slice() -> int:  # runs in the writer thread, inside the batch
            nonlocal deleted
            deleted += sqlite_purge.SLICE_ROWS
            say(f"slice {deleted}")
            time.sleep(0.05)
            return 0  # never gives way: the batch goes on
        return sliced(conn, compiled, params, after_a_slice)

    sqlite_adapter.purge_in_slices = slow  # type: ignore[assignment]
    async with open_store(url, settings=Settings(), load_entrypoints=False) as stm:
        say("ready")
        total = await stm.janitor.run_once(progress=lambda done: say(f"batch {done}"))
        say(f"done {total}")


def slices_from_env() -> None:
    if rows := os.environ.get("STM_TEST_PURGE_SLICE_ROWS"):
        sqlite_purge.SLICE_ROWS = int(rows)
    if os.environ.get("STM_TEST_PURGE_GIVE_WAY") == "1":
        sqlite_purge.YIELD_AFTER_S = 0.0
        sliced = sqlite_purge.purge_in_slices

        def giving_way(conn: Any, compiled: Any, params: dict[str, Any],
                       _waiting: Callable[[], int]) -> sqlite_purge.SlicedPurge:
            return sliced(conn, compiled, params, lambda: 1)

        sqlite_adapter.purge_in_slices = giving_way  # type: ignore[assignment]


if __name__ == "__main__":
    mode, url, *rest = sys.argv[1:]
    slices_from_env()
    if mode == "write":
        asyncio.run(write(url, rest[0], int(rest[1])))
    elif mode == "sliced-janitor":
        asyncio.run(sliced_janitor(url))
    else:
        asyncio.run(janitor(url))
