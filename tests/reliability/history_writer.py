"""A process editing one shared memory row with history kept:
``python -m tests.reliability.history_writer URL LABEL COUNT``.

Edits the summary of server ``g``, channel ``c``, persona ``p`` ``COUNT`` times
(``-1``: until killed) with ``STM_MEMORY_HISTORY_REVISIONS=4``, printing
``ack I`` once edit ``I`` committed.
"""

from __future__ import annotations

import asyncio
import sys

from stm_core.settings import Settings
from stm_core.store import open_store

KEEP_EARLIER = 4


async def main(url: str, label: str, count: int) -> None:
    settings = Settings(memory_history_revisions=KEEP_EARLIER)
    async with open_store(url, settings=settings, load_entrypoints=False) as stm:
        print("ready", flush=True)
        i = 0
        while count < 0 or i < count:
            await stm.admin.edit_memory(server_id="g", channel_id="c", persona_id="p",
                                        summary=f"{label} edit {i}")
            print(f"ack {i}", flush=True)
            i += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
