"""``turn_split_cpu_us``: where a host turn's CPU goes, stm beside its floor.

``build_ratio`` times a warm build of a server nothing writes to, so every
rendered row and every converted text is remembered. A host's turn is not
that: it records the turn, then builds, and the row it just wrote moves the
other channels (one of them shown for the first time, a new block to
convert). This scenario runs whole host turns (as ``turn_ratio_sqlite`` does)
and reads the main thread's CPU time around each half: ``record_turn`` and
the ``build_context`` after it for stm, the dedicated-thread write and the
hand-written build over its own dict for the floor (``bench.floor_turn``).
The writer threads run the same SQL on both sides and are not counted.
Sides alternate in blocks of 25 turns, the order rotating each round.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floor_turn import FloorTurn
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
from stm_core.clock import ManualClock
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
    writer = await thread_writer(cfg.workdir / "split_floor.db", clock)
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "split.db"), clock) as stm:
            _ours, _theirs, check = await host_turn_pair(stm, clock, writer, load)
            floor = FloorTurn(writer, load.server, load.names, render_mode="crude_summary",
                              now_ms=w.EPOCH_MS)
            for i in range(len(load.channels)):  # its dict holds every channel, as stm's view
                await floor.write(load.channel(i), load.histories[i % WINDOWS],
                                  load.replies[i % WINDOWS], w.EPOCH_MS + i * 1000)
            blocks = await _blocks(cfg, stm, clock, floor, load)
    finally:
        await writer.close()
    cpu = {half: round(statistics.median(values), 2) for half, values in blocks.items()}
    return {
        "turn_split_cpu_us": cpu,
        # The build in a host's turn against the floor's, and the write likewise.
        "turn_split_build_cpu_ratio": round(cpu["stm_build"] / cpu["floor_build"], 3),
        "turn_split_record_cpu_ratio": round(cpu["stm_record"] / cpu["floor_write"], 3),
        "turn_split_texts_equal": check["texts_equal"],
    }


async def _blocks(cfg: RunConfig, stm: Stm, clock: ManualClock, floor: FloorTurn,
                  load: Workload) -> dict[str, list[float]]:
    """Per block of turns, each half's main-thread CPU µs per turn."""
    blocks: dict[str, list[float]] = {half: [] for half in HALVES}
    sides = [_stm_block, _floor_block]
    start = len(load.channels) + 1  # the indexes before were the warm-up's
    for r in range(cfg.rounds):
        order = sides[r % 2:] + sides[:r % 2]
        base = start + r * cfg.turns
        for first in range(base, base + cfg.turns, BLOCK):
            stop = min(first + BLOCK, base + cfg.turns)
            for side in order:
                for half, us in (await side(stm, clock, floor, load, first, stop)).items():
                    blocks[half].append(us)
    return blocks


async def _stm_block(stm: Stm, clock: ManualClock, _floor: FloorTurn, load: Workload,
                     first: int, stop: int) -> dict[str, float]:
    record = build = 0.0
    cpu = time.thread_time
    for i in range(first, stop):
        stamp(clock, i)
        turn = load.turn(i)
        begin = cpu()
        await stm.record_turn(turn, load.histories[i % WINDOWS], load.replies[i % WINDOWS])
        middle = cpu()
        await stm.build_context(turn)
        record, build = record + middle - begin, build + cpu() - middle
    turns = stop - first
    return {"stm_record": record * 1e6 / turns, "stm_build": build * 1e6 / turns}


async def _floor_block(_stm: Stm, _clock: ManualClock, floor: FloorTurn, load: Workload,
                       first: int, stop: int) -> dict[str, float]:
    write = build = 0.0
    cpu = time.thread_time
    for i in range(first, stop):
        now = w.EPOCH_MS + i * 1000
        channel = load.channel(i)
        begin = cpu()
        await floor.write(channel, load.histories[i % WINDOWS], load.replies[i % WINDOWS], now)
        middle = cpu()
        floor.hand.now_ms = now
        floor.hand.build(floor.server, channel)
        write, build = write + middle - begin, build + cpu() - middle
    turns = stop - first
    return {"floor_write": write * 1e6 / turns, "floor_build": build * 1e6 / turns}
