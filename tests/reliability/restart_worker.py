"""One bot process of the database-restart test:
``python -m tests.reliability.restart_worker URL``.

It opens a store (statements and listener through the same URL, the test's
proxy) and obeys JSON commands on stdin, one answer line each on stdout
(the protocol of :mod:`.procs`):

* ``{"op": "start", "index": N, "probe": "write" | "watch"}``: start the load
  and the staleness probe in the background; answers ``started``.
  The load, one step after another: a turn on a row every process shares
  (its counter must count each acknowledged turn exactly once), a tool call
  and, every third step, an admin edit, each on a row of its own (every
  acknowledged one must be stored), and a ``build_context``. The probe
  either writes a new ``<vK>`` summary in the probe channel every
  ``PROBE_GAP_S`` (admin edits) or keeps building the context of another
  channel of that server and notes when each new version first shows.
* ``{"op": "stop"}``: stop both and answer ``report``: every acknowledged
  write, every failed call with its time and error type, the listener's
  connection changes over time and its stats.
* ``{"op": "coherent"}``: answer ``coherent`` with where the cache disagrees
  with the database (see :func:`.support.cache_problems`).
* ``{"op": "quit"}``.

Times are wall-clock (``time.time()``) so the test can line them up with the
moment it cut and restored the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
import time
import traceback
from typing import Any

import attrs

from stm_core.errors import StmError
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.settings import Settings
from stm_core.store import Stm, open_store

from .support import cache_problems
from .worker_io import commands, say

LOAD_SERVER = "load"
SHARED_CHANNEL = "busy"
SHARED_PERSONA = "shared"
PROBE_SERVER = "guild"
PROBE_WRITTEN = "news"
PROBE_READ = "lobby"
PROBE_GAP_S = 0.05
STEP_PAUSE_S = 0.02
WATCH_PAUSE_S = 0.005
MARKER = re.compile(r"<v(\d+)>")


def own_server(index: int) -> str:
    """Where a process's tool calls and admin edits go: nobody else reads it."""
    return f"own-{index}"


def error_type(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def foreign(exc: BaseException) -> str | None:
    """What went wrong, when it is not one of our errors (for the test's message)."""
    if isinstance(exc, StmError):
        return None
    return "".join(traceback.format_exception(exc))[-3000:]


class CaughtErrors(logging.Handler):
    """The exceptions stm logged instead of raising (``build_context`` and
    ``apply_tool_call`` never raise): their types are what a caller would
    have got."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.types: list[str] = []
        self.foreign: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.types.append(error_type(record.exc_info[1]))
            if (detail := foreign(record.exc_info[1])) is not None:
                self.foreign.append(detail)


@attrs.define
class Run:
    stm: Stm
    index: int
    caught: CaughtErrors
    acked: dict[str, list[Any]] = attrs.field(factory=lambda: {
        "turn": [], "tool": [], "admin": [], "probe": []})
    failures: list[dict[str, Any]] = attrs.field(factory=list)
    seen: dict[int, float] = attrs.field(factory=dict)
    listener_changes: list[tuple[float, bool]] = attrs.field(factory=list)

    def failed(self, op: str, started: float, types: list[str],
               exc: BaseException | None = None) -> None:
        """A call that began at ``started`` failed now (both kept: a call caught
        in an outage may fail only once the database is back)."""
        self.failures.append({"op": op, "t0": started, "t": time.time(), "types": types})
        if exc is not None and (detail := foreign(exc)) is not None:
            self.caught.foreign.append(detail)

    def logged_types(self, before: int) -> list[str]:
        return self.caught.types[before:] or ["(nothing logged)"]

    async def load(self) -> None:
        stm, n = self.stm, self.index
        i = 0
        while True:
            i += 1
            tag = f"p{n}-{i}"
            history = [HistoryMessage(author_type="user", content=f"hello {tag}",
                                      speaker_name="u")]
            shared = Turn(user_id=f"u-{tag}", channel_id=SHARED_CHANNEL,
                          server_id=LOAD_SERVER, persona_id=SHARED_PERSONA, has_tools=True)
            started = time.time()
            try:
                recorded = await stm.record_turn(shared, history, [PersonaResponse(
                    persona_id=SHARED_PERSONA, persona_name="Shared", content=f"re {tag}")])
                self.acked["turn"].append([recorded.counters[SHARED_PERSONA], time.time()])
            except Exception as exc:
                self.failed("record_turn", started, [error_type(exc)], exc)
            own = Turn(user_id=f"u-{tag}", channel_id="tools", server_id=own_server(n),
                       persona_id=f"t-{i}", has_tools=True)
            before, started = len(self.caught.types), time.time()
            result = await stm.apply_tool_call(own, {"summary": f"tool {tag}"})
            if result.ok:
                self.acked["tool"].append([i, time.time()])
            else:
                self.failed("apply_tool_call", started, self.logged_types(before))
            if i % 3 == 0:
                started = time.time()
                try:
                    await stm.admin.edit_memory(channel_id="admin", persona_id=f"a-{i}",
                                                server_id=own_server(n),
                                                summary=f"admin {tag}")
                    self.acked["admin"].append([i, time.time()])
                except Exception as exc:
                    self.failed("edit_memory", started, [error_type(exc)], exc)
            before, started = len(self.caught.types), time.time()
            ctx = await stm.build_context(shared)
            if len(self.caught.types) > before or ctx == StmContext.error_fallback():
                self.failed("build_context", started, self.logged_types(before))
            await asyncio.sleep(STEP_PAUSE_S)

    async def write_probe(self) -> None:
        k = 0
        while True:
            t0 = time.time()
            try:
                await self.stm.admin.edit_memory(channel_id=PROBE_WRITTEN, server_id=PROBE_SERVER,
                                                 summary=f"version <v{k}>")
                self.acked["probe"].append([k, t0])
            except Exception as exc:
                self.failed("probe edit_memory", t0, [error_type(exc)], exc)
            k += 1
            await asyncio.sleep(PROBE_GAP_S)

    async def watch_probe(self) -> None:
        probe = Turn(user_id="reader", channel_id=PROBE_READ, server_id=PROBE_SERVER)
        newest = -1
        while True:
            ctx = await self.stm.build_context(probe)
            text = ctx.memory_items[0].text if ctx.memory_items else ""
            found = [int(m) for m in MARKER.findall(text)]
            if found and max(found) > newest:
                newest = max(found)
                self.seen[newest] = time.time()
            await asyncio.sleep(WATCH_PAUSE_S)

    async def follow_listener(self) -> None:
        listener = self.stm.listener
        assert listener is not None
        state = listener.connected
        self.listener_changes.append((time.time(), state))
        while True:
            await asyncio.sleep(0.01)
            if listener.connected != state:
                state = listener.connected
                self.listener_changes.append((time.time(), state))

    def report(self) -> dict[str, Any]:
        listener = self.stm.listener
        assert listener is not None
        return {"acked": self.acked, "failures": self.failures,
                "seen": {str(k): t for k, t in self.seen.items()},
                "listener_changes": self.listener_changes,
                "listener_connected": listener.connected, "foreign": self.caught.foreign,
                "listener_stats": attrs.asdict(listener.stats)}


async def main(url: str) -> None:
    caught = CaughtErrors()
    logging.getLogger("stm").addHandler(caught)
    # The outage logs an error per failed call; nobody reads this process's stderr.
    logging.getLogger("stm").propagate = False
    settings = Settings.from_env()
    async with open_store(url, settings=settings, load_entrypoints=False) as stm:
        assert stm.listener is not None
        await stm.listener.wait_connected(30)
        say(event="ready")
        loop = asyncio.get_running_loop()
        run: Run | None = None
        tasks: list[asyncio.Task[None]] = []
        async for cmd in commands():
            op = cmd["op"]
            if op == "start":
                run = Run(stm, cmd["index"], caught)
                probe = run.write_probe if cmd["probe"] == "write" else run.watch_probe
                tasks = [loop.create_task(job()) for job in
                         (run.load, probe, run.follow_listener)]
                say(event="started")
            elif op == "stop":
                assert run is not None
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                say(event="report", **run.report())
            elif op == "coherent":
                say(event="coherent", problems=await cache_problems(stm))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
