"""Imports to be killed mid-way: ``python -m tests.reliability.import_forker URL``.

The process imports stm once, then for every number ``K`` read from stdin
forks a child that opens a store and imports :func:`document` ``K``,
``K + 1``, … one after another, printing ``ack K`` after each returned. It
prints ``pid P`` for the child, waits for it (the test kills it with
SIGKILL) and prints ``reaped``. Forking a warm process keeps each kill
cheap, so a test can afford many.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from typing import Any

from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
from stm_core.admin.params import PARAM_NAMES
from stm_core.store import open_store

SERVER = "imported"


def document(k: int) -> dict[str, Any]:
    """Import ``k``: every section differs from import ``k - 1``'s (the
    categories too, so each import also clears the server's memories)."""
    return {
        "format": FORMAT_NAME, "version": FORMAT_VERSION,
        # Every parameter, as an export shows it (unset ones as None).
        "params": {**dict.fromkeys(PARAM_NAMES), "refresh_cadence": 1 + k % 100,
                   "nudge_injection_depth": k % 21, "content_injection_depth": k % 20},
        "prompts": {"tool_description": f"tool {k}", "nudge": f"nudge {k}"},
        "categories": [{"label": f"Topic {k}", "description": f"what import {k} tracks"},
                       {"label": "Mood", "description": f"feelings, take {k}"}],
        "stm_enabled": k % 2 == 0,
        "privacy": {"private_channel_ids": [f"p{k}", f"q{k}"], "bypass": k % 2 == 1},
    }


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


async def import_from(url: str, first: int) -> None:
    async with open_store(url, load_entrypoints=False, listen_for_changes=False) as stm:
        say("ready")
        for k in itertools.count(first):
            await stm.admin.import_config(SERVER, document(k))
            say(f"ack {k}")


async def warm_up() -> None:
    """Import what opening a store imports lazily, so forked children start warm."""
    import stm_plugins.sqlalchemy_storage.postgres_adapter
    import stm_plugins.sqlalchemy_storage.sqlite_adapter  # noqa: F401

    async with open_store("memory://", load_entrypoints=False) as stm:
        await stm.admin.import_config(SERVER, document(0))


def main(url: str) -> None:
    asyncio.run(warm_up())
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                asyncio.run(import_from(url, int(line)))
            finally:
                os._exit(0)
        say(f"pid {pid}")
        os.waitpid(pid, 0)
        say("reaped")


if __name__ == "__main__":
    main(sys.argv[1])
