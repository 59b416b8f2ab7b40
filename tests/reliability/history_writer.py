"""A process editing one shared memory row with history kept:
``python -m tests.reliability.history_writer URL LABEL COUNT [undo]``.

Edits the summary of server ``g``, channel ``c``, persona ``p`` ``COUNT`` times
(``-1``: until killed) with ``STM_MEMORY_HISTORY_REVISIONS=4``, printing
``ack I`` once write ``I`` committed. With ``undo``, every edit is followed by
an undo (another committed write, or ``skip`` when nothing differs).
"""

from __future__ import annotations

import asyncio
import sys

from stm_core.errors import ValidationError
from stm_core.settings import Settings
from stm_core.store import open_store

KEEP_EARLIER = 4
WHERE = {"server_id": "g", "channel_id": "c", "persona_id": "p"}


async def main(url: str, label: str, count: int, undo: bool) -> None:
    settings = Settings(memory_history_revisions=KEEP_EARLIER)
    async with open_store(url, settings=settings, load_entrypoints=False) as stm:
        print("ready", flush=True)
        i = 0
        while count < 0 or i < count:
            await stm.admin.edit_memory(**WHERE, summary=f"{label} edit {i}")
            print(f"ack {i}", flush=True)
            if undo:
                try:
                    await stm.admin.undo_memory(**WHERE)
                    print(f"ack {i} undo", flush=True)
                except ValidationError:
                    print("skip", flush=True)
            i += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "undo" in sys.argv[4:]))
