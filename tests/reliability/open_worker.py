"""One process of the concurrent first-open and upgrade tests:
``python -m tests.reliability.open_worker URL...``.

For each URL in turn it waits for a line on stdin (so every process opens
the same database at once), opens a store on it (schema creation or upgrade
included), writes one row, closes it and prints ``ok`` or
``failed <error>``. The schema steps it applies to an existing database are
logged to stderr (the upgrade test kills it once one has started).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from stm_core.store import open_store


async def main(urls: list[str]) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    logging.getLogger("stm.storage.migrations").setLevel(logging.INFO)
    for url in urls:
        await asyncio.to_thread(sys.stdin.readline)
        try:
            async with open_store(url, load_entrypoints=False,
                                  listen_for_changes=False) as stm:
                await stm.admin.add_private_channels("g", channel_ids=[str(id(stm))])
        except Exception as exc:
            print(f"failed {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
        else:
            print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
