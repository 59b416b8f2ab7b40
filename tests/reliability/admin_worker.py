"""One process of the concurrent admin test:
``python -m tests.reliability.admin_worker URL TAG N``.

It opens a store, prints ``ready``, waits for a line on stdin (so every
process starts at once), runs :func:`.admin_ops.drive` and prints its report
as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys

from stm_core.store import open_store

from .admin_ops import drive


async def main(url: str, tag: str, n: int) -> None:
    async with open_store(url, load_entrypoints=False) as stm:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        report = await drive(stm, tag, n)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
