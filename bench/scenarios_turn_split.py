"""``turn_split_cpu_us``: where a host turn's CPU goes, stm beside its floor.

``build_ratio`` times a warm build of a server nothing writes to, so every
rendered row and every converted text is remembered. A host's turn is not
that: it records the turn, then builds, and the row it just wrote moves the
other channels (one of them shown for the first time, a new block to
convert). This scenario runs whole host turns (as ``turn_ratio_sqlite`` does)
and reads the main thread's CPU time around each half: ``record_turn`` and
the ``build_context`` after it for stm, the write and the hand-written build
over its own dict for the floor (``bench.floor_turn``). Both sides write a
lone turn on the caller's thread (stm's inline write, the floor's
:class:`~bench.floors_thread.InlineWriter`), so the write half counts the
same SQL on both sides. Sides alternate in blocks of 25 turns, the order
rotating each round.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floor_turn import FloorTurn
from bench.floors_thread import InlineWriter
from bench.harness import prepared_set_aside
from bench.scenarios_record import (
    WINDOWS,
    Workload,
    host_turn_pair,
    stamp,
    thread_writer,
    turn_count,
)
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.store import Stm

#: A server of its own (configured like the whole-turn scenarios' server).
SERVER = w.server_id(502)
BLOCK = 25
HALVES = ("stm_record", "stm_build", "floor_write", "floor_build")


async def run(cfg: RunConfig) -> dict[str, Any]:
    load = Workload(channels=cfg.channels, server=SERVER)
    load.prepare(turn_count(cfg, cfg.channels) + cfg.channels + 1)
    with prepared_set_aside():
        return await _run(cfg, load)


async def _run(cfg: RunConfig, load: Workload) -> dict[str, Any]:
    clock = ManualClock(w.EPOCH_MS)
    # stm writes a lone turn on the caller's thread: so does the floor.
    writer = await thread_writer(cfg.workdir / "split_floor.db", clock, kind=InlineWriter)
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "split.db"), clock) as stm:
            pair = await host_turn_pair(stm, clock, writer, load)
            blocks = await _blocks(cfg, stm, clock, pair.floor, load)
    finally:
        await writer.close()
    cpu = {half: round(statistics.median(v[0] for v in values), 2)
           for half, values in blocks.items()}
    wall = {half: round(statistics.median(v[1] for v in values), 2)
            for half, values in blocks.items()}
    return {
        "turn_split_cpu_us": cpu,
        "turn_split_wall_us": wall,
        # The build in a host's turn against the floor's, and the write likewise.
        "turn_split_build_cpu_ratio": round(cpu["stm_build"] / cpu["floor_build"], 3),
        "turn_split_record_cpu_ratio": round(cpu["stm_record"] / cpu["floor_write"], 3),
        "turn_split_texts_equal": pair.check["texts_equal"],
    }


#: A half of a turn, called with the turn index.
Half = Callable[[int], Awaitable[object]]


async def _blocks(cfg: RunConfig, stm: Stm, clock: ManualClock, floor: FloorTurn,
                  load: Workload) -> dict[str, list[tuple[float, float]]]:
    """Per block of turns, each half's main-thread CPU and wall µs per turn."""
    async def stm_record(i: int) -> None:
        stamp(clock, i)
        await stm.record_turn(load.turn(i), load.histories[i % WINDOWS],
                              load.replies[i % WINDOWS])

    async def stm_build(i: int) -> None:
        await stm.build_context(load.turn(i))

    async def floor_write(i: int) -> None:
        await floor.write(load.channel(i), load.histories[i % WINDOWS],
                          load.replies[i % WINDOWS], w.EPOCH_MS + i * 1000)

    async def floor_build(i: int) -> None:
        floor.hand.now_ms = w.EPOCH_MS + i * 1000
        floor.hand.build(floor.server, load.channel(i))

    sides = [(("stm_record", stm_record), ("stm_build", stm_build)),
             (("floor_write", floor_write), ("floor_build", floor_build))]
    blocks: dict[str, list[tuple[float, float]]] = {half: [] for half in HALVES}
    start = len(load.channels) + 1  # the indexes before were the warm-up's
    for r in range(cfg.rounds):
        base = start + r * cfg.turns
        for first in range(base, base + cfg.turns, BLOCK):
            stop = min(first + BLOCK, base + cfg.turns)
            for side in sides[r % 2:] + sides[:r % 2]:
                for half, figures in zip(side, await _halves(side, first, stop), strict=True):
                    blocks[half[0]].append(figures)
    return blocks


async def _halves(side: tuple[tuple[str, Half], tuple[str, Half]], first: int,
                  stop: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Turns ``first..stop-1`` of one side, each its two halves in order; the
    main thread's CPU and the wall µs per turn of each half."""
    (_, one), (_, two) = side
    cpu, wall = time.thread_time, time.perf_counter
    spent = [0.0, 0.0, 0.0, 0.0]
    for i in range(first, stop):
        c0, w0 = cpu(), wall()
        await one(i)
        c1, w1 = cpu(), wall()
        await two(i)
        c2, w2 = cpu(), wall()
        spent[0] += c1 - c0
        spent[1] += w1 - w0
        spent[2] += c2 - c1
        spent[3] += w2 - w1
    scale = 1e6 / (stop - first)
    return ((spent[0] * scale, spent[1] * scale), (spent[2] * scale, spent[3] * scale))
