"""The line protocol of the long-lived worker processes (``shard``,
``restart_worker``): JSON events out on stdout, JSON commands in on stdin."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def commands() -> AsyncIterator[dict[str, Any]]:
    """Each command read from stdin, until it closes or says ``quit``; the
    event loop keeps running while a line is awaited."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        cmd: dict[str, Any] = json.loads(line)
        if cmd["op"] == "quit":
            return
        yield cmd
