"""The process the crash test kills: ``python -m tests.reliability.crash_writer URL FIRST``.

Runs operations ``FIRST, FIRST+1, ...`` of :mod:`.crash_ops` one after
another and prints ``ack I`` once operation ``I`` returned (its writes
committed). It never stops by itself; the test kills it with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys

from stm_core._util.clock import ManualClock
from stm_core.settings import Settings
from stm_core.store import open_store

from .crash_ops import apply, at


async def main(url: str, first: int) -> None:
    clock = ManualClock(at(first))
    async with open_store(url, settings=Settings(), clock=clock,
                          load_entrypoints=False) as stm:
        out = sys.stdout
        out.write("ready\n")
        out.flush()
        i = first
        while True:
            await apply(stm, clock, i)
            out.write(f"ack {i}\n")
            out.flush()
            i += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
