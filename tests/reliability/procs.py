"""Driving child processes (:mod:`tests.reliability.shard`) from a test."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from .support import child_command, child_env


class Shard:
    """One ``shard`` child process and its JSON line protocol."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        #: What a running ``watch`` reports, apart from the answers to commands.
        self.watch_events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, url: str, env: dict[str, str] | None = None, *,
                    module: str = "shard") -> Shard:
        """A child running ``tests.reliability.<module> URL`` (the same protocol)."""
        proc = await asyncio.create_subprocess_exec(
            *child_command(module, url), env=child_env(**(env or {})),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=2**24)
        shard = cls(proc)
        await shard.expect("ready", timeout=60)
        return shard

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            event = json.loads(line)
            watching = event["event"] in ("seen", "watch_done")
            await (self.watch_events if watching else self.events).put(event)
        await self.events.put({"event": "exit"})
        await self.watch_events.put({"event": "exit"})

    def send(self, **cmd: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())

    async def expect(self, event: str, timeout: float = 120) -> dict[str, Any]:
        while True:
            got = await asyncio.wait_for(self.events.get(), timeout)
            if got["event"] == event:
                return got
            if got["event"] == "exit":
                raise AssertionError(f"child exited before {event!r}: {await self.stderr()}")

    async def call(self, op: str, answer: str, timeout: float = 120,
                   **fields: Any) -> dict[str, Any]:
        self.send(op=op, **fields)
        return await self.expect(answer, timeout)

    async def stderr(self) -> str:
        assert self.proc.stderr is not None
        with contextlib.suppress(Exception):
            return (await asyncio.wait_for(self.proc.stderr.read(), 5)).decode()[-4000:]
        return ""

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                self.send(op="quit")
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self._reader.cancel()


@contextlib.asynccontextmanager
async def shards(url: str, n: int, env: dict[str, str] | None = None, *,
                 module: str = "shard") -> AsyncIterator[list[Shard]]:
    """``n`` shard processes on ``url`` (``env``: extra environment, e.g. settings)."""
    started = await asyncio.gather(*(Shard.start(url, env, module=module) for _ in range(n)))
    try:
        yield list(started)
    finally:
        await asyncio.gather(*(s.stop() for s in started))
