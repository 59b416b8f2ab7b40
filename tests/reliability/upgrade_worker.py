"""One process of the upgrade tests: ``python -m tests.reliability.upgrade_worker URL``.

Logs the schema steps it applies to stderr (the test kills it once one has
started), waits for a line on stdin, opens a store on ``URL`` (the upgrade
included) and prints ``ok``.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from stm_core.store import open_store


async def main(url: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("stm.storage.migrations").setLevel(logging.INFO)
    await asyncio.to_thread(sys.stdin.readline)
    async with open_store(url, load_entrypoints=False, listen_for_changes=False):
        pass
    print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
