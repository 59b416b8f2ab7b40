"""A lone caller on an event loop that is never idle, against stdlib ``sqlite3``.

A bot's loop always has other work: a gateway heartbeat, timers, a task that
wakes at every pass. :class:`BusyLoop` runs such tasks beside the turns: one
heartbeat every millisecond, ``TIMERS`` tasks on timers of 5 to 100 ms, and
one task that wakes at every pass of the loop, so the loop has a callback
ready at every moment. Before each timed turn the caller awaits one pass of
the loop (its model's answer), untimed, as a bot does.

* ``busy_loop_turn_ratio``: stm's whole turn (``record_turn`` + warm
  ``build_context``) ÷ the floor of the issue: stdlib ``sqlite3`` on the loop's
  own thread, ``BEGIN IMMEDIATE``, stm's two upserts, ``COMMIT`` (stm's SQL,
  pragmas and checkpoint policy, :class:`~bench.floors_thread.InlineWriter`),
  then a ``SELECT`` of the live row (:class:`LoneTurnFloor`);
* ``busy_loop_record_ratio``: ``record_turn`` ÷ the floor's write alone;
* ``busy_loop_writes_inline_share``: the share of stm's timed writes that ran on
  the caller's thread on that loop (a write that finds the loop's callbacks
  waiting for an earlier one goes to the writer thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floors import guild_keys
from bench.floors_thread import InlineWriter
from bench.harness import cpu_ratio, interleave, prepared_set_aside, ratio
from bench.scenarios_record import (
    TURN_SERVER,
    WINDOWS,
    Workload,
    stm_host_turn,
    stm_record,
    thread_writer,
    turn_count,
)
from bench.stm_side import inline_share, open_bench_store, seed_typical_server, writer_jobs
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse

#: Unrelated tasks sleeping on timers (a bot's typing indicators, polls).
TIMERS = 50
HEARTBEAT_S = 0.001

LIVE_ROW = ("SELECT * FROM stm_memories WHERE scope_kind = ? AND server_id = ? "
            "AND user_id = ? AND channel_id = ? AND persona_id = ?")


class BusyLoop:
    """Unrelated tasks on the running loop, as a bot's loop has them."""

    def __init__(self) -> None:
        self._stop = False
        self._tasks: list[asyncio.Task[None]] = []
        self.wakeups = 0

    async def _every_pass(self) -> None:
        while not self._stop:
            self.wakeups += 1
            await asyncio.sleep(0)

    async def _sleeper(self, period_s: float) -> None:
        while not self._stop:
            self.wakeups += 1
            await asyncio.sleep(period_s)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[BusyLoop]:
        rng = random.Random(31)
        periods = [HEARTBEAT_S] + [rng.uniform(0.005, 0.1) for _ in range(TIMERS)]
        self._tasks = [asyncio.ensure_future(self._sleeper(p)) for p in periods]
        self._tasks.append(asyncio.ensure_future(self._every_pass()))
        try:
            yield self
        finally:
            self._stop = True
            await asyncio.gather(*self._tasks)


async def one_pass() -> None:
    """The caller awaits something else for one pass of the loop."""
    await asyncio.sleep(0)


class LoneTurnFloor:
    """The issue's floor of a whole turn: the write on the caller's thread,
    then the live row read back with a plain ``SELECT`` (no build)."""

    def __init__(self, writer: InlineWriter, server: str) -> None:
        self.writer = writer
        self.server = server

    async def write(self, channel: str, hist: Sequence[HistoryMessage],
                    resp: Sequence[PersonaResponse], now_ms: int) -> list[Any]:
        return await self.writer.record(self.server, channel, w.USER_ID, hist, resp, now_ms)

    async def turn(self, channel: str, hist: Sequence[HistoryMessage],
                   resp: Sequence[PersonaResponse], now_ms: int) -> list[Any]:
        await self.write(channel, hist, resp, now_ms)
        live = guild_keys(self.server, channel, w.USER_ID)[0]
        return self.writer.connection.execute(LIVE_ROW, live).fetchall()


def floor_fn(floor: LoneTurnFloor, load: Workload, *,
             whole: bool) -> Callable[[int], Awaitable[object]]:
    step = floor.turn if whole else floor.write

    async def one(i: int) -> object:
        return await step(load.channel(i), load.histories[i % WINDOWS],
                          load.replies[i % WINDOWS], w.EPOCH_MS + i * 1000)
    return one


async def run(cfg: RunConfig) -> dict[str, Any]:
    load = Workload(channels=cfg.channels, server=TURN_SERVER)
    load.prepare(turn_count(cfg, cfg.channels) + cfg.channels + 1)
    with prepared_set_aside():
        return await _run(cfg, load)


async def _run(cfg: RunConfig, load: Workload) -> dict[str, Any]:
    clock = ManualClock(w.EPOCH_MS)
    writer = await thread_writer(cfg.workdir / "floor_busy_loop.db", clock, kind=InlineWriter)
    assert isinstance(writer, InlineWriter)
    floor = LoneTurnFloor(writer, load.server)
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "stm_busy_loop.db"), clock) as stm:
            await seed_typical_server(stm, load.server, (), now_ms=w.EPOCH_MS,
                                      render_mode="crude_summary")
            ours = stm_host_turn(stm, clock, load)
            theirs = floor_fn(floor, load, whole=True)
            for i in range(cfg.channels):  # every channel written once: warm views
                await ours(i)
                await theirs(i)
            async with BusyLoop().running() as busy:
                jobs = writer_jobs(stm)
                stats = await interleave({
                    "stm_turn_busy_loop": ours,
                    "floor_turn_busy_loop": theirs,
                    "stm_record_busy_loop": stm_record(stm, clock, load),
                    "floor_record_busy_loop": floor_fn(floor, load, whole=False),
                }, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup,
                    placement="one_cpu", first=cfg.channels, pause=one_pass)
                share = inline_share(stm, since=jobs)
                wakeups = busy.wakeups
    finally:
        await writer.close()
    turn, floor_turn = stats["stm_turn_busy_loop"], stats["floor_turn_busy_loop"]
    rec, floor_rec = stats["stm_record_busy_loop"], stats["floor_record_busy_loop"]
    return {
        "busy_loop_turn_ratio": ratio(turn, floor_turn),
        "busy_loop_turn_cpu_ratio": cpu_ratio(turn, floor_turn),
        "busy_loop_record_ratio": ratio(rec, floor_rec),
        "busy_loop_record_cpu_ratio": cpu_ratio(rec, floor_rec),
        "busy_loop_writes_inline_share": share,
        "busy_loop": {"timers": TIMERS, "heartbeat_s": HEARTBEAT_S,
                      "unrelated_wakeups": wakeups},
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
