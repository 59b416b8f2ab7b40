"""``janitor_writer_p99_ms``: a janitor purging a large backlog while turns go on.

The backlog (rows untouched for longer than the retention) is seeded straight
into stm's table; a writer calls ``record_turn`` about every 2 ms while
``stm.janitor.run_once()`` deletes it. The writer's latency during the purge
is what a chat would feel.

Two backlog shapes: *ordered* (the stale rows are the oldest inserted, so a
batch deletes neighbouring rows) and *scattered* (stale rows spread over the
whole table, so a batch touches pages everywhere). The headline is the worse.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from bench import workload as w
from bench.config import RunConfig
from bench.harness import Stats
from bench.scenarios_record import WINDOWS, Workload
from bench.seeding import check_schema, count_rows, seed_rows
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core.clock import ManualClock
from stm_core.settings import DAY_MS, Settings
from stm_core.store import Stm

T = TypeVar("T")

STALE_SERVER_BASE = 5_000_000


class PacedWriter:
    """``record_turn`` about every ``interval_s``, timing each call."""

    def __init__(self, stm: Stm, load: Workload, interval_s: float) -> None:
        self.stm = stm
        self.load = load
        self.interval_s = interval_s
        self.turn = 0

    async def write_while(self, work: Awaitable[T]) -> tuple[list[int], T]:
        """Keep writing until ``work`` finishes; returns the latencies (ns) and its result."""
        latencies: list[int] = []
        done = asyncio.Event()
        load = self.load

        async def writer() -> None:
            while not done.is_set():
                i = self.turn
                self.turn += 1
                begin = time.perf_counter_ns()
                await self.stm.record_turn(load.turn(i), load.histories[i % WINDOWS],
                                           load.replies[i % WINDOWS])
                elapsed = time.perf_counter_ns() - begin
                latencies.append(elapsed)
                await asyncio.sleep(max(0.0, self.interval_s - elapsed / 1e9))

        task = asyncio.create_task(writer())
        await asyncio.sleep(0.01)  # the writer is in its stride before the work starts
        try:
            result = await work
        finally:
            done.set()
            await task
        return latencies, result


async def run(cfg: RunConfig) -> dict[str, Any]:
    shapes = {shape: await purge_under_load(cfg, scattered=shape == "scattered")
              for shape in ("ordered", "scattered")}
    worst = max(shapes.values(), key=lambda j: j["writer_p99_ms"])
    return {"janitor_writer_p99_ms": worst["writer_p99_ms"],
            "janitor": {**worst, "by_backlog_shape": shapes}}


async def purge_under_load(cfg: RunConfig, *, scattered: bool) -> dict[str, Any]:
    path = cfg.workdir / f"janitor_{'scattered' if scattered else 'ordered'}.db"
    clock = ManualClock(w.EPOCH_MS)
    settings = Settings()
    async with open_bench_store(sqlite_url(path), clock, settings=settings):
        pass
    check_schema(path)
    stale_at = w.EPOCH_MS - int(settings.janitor_retention_days * DAY_MS) - DAY_MS
    seed_rows(path, 0, cfg.janitor_backlog, updated_at_ms=stale_at,
              server_base=STALE_SERVER_BASE, scattered=scattered)
    fresh = max(1, cfg.janitor_backlog // 10)
    seed_rows(path, 0, fresh, updated_at_ms=w.EPOCH_MS - w.MINUTE_MS)
    rows_before = count_rows(path)
    async with open_bench_store(sqlite_url(path), clock, settings=settings) as stm:
        writer = PacedWriter(stm, Workload(channels=cfg.channels),
                             cfg.janitor_writer_interval_ms / 1000)
        # The same writer alone first: the machine's own tail, for comparison.
        baseline, _ = await writer.write_while(asyncio.sleep(cfg.janitor_baseline_s))
        start = time.perf_counter()
        during, outcome = await writer.write_while(stm.janitor.run_once())
        wall = time.perf_counter() - start
    rows_after = count_rows(path)
    stats, alone = Stats.of(during), Stats.of(baseline)
    return {"backlog_shape": "scattered" if scattered else "ordered",
            "backlog_rows": cfg.janitor_backlog, "rows_before": rows_before,
            "rows_after": rows_after, "deleted": rows_before - rows_after,
            "run_once_returned": repr(outcome), "janitor_wall_s": round(wall, 3),
            "writer_turns": stats.n,
            "writer_p50_ms": round(stats.median_us / 1000, 3),
            "writer_p99_ms": round(stats.p99_us / 1000, 3),
            "writer_max_ms": round(stats.max_us / 1000, 3),
            "writer_alone_p50_ms": round(alone.median_us / 1000, 3),
            "writer_alone_p99_ms": round(alone.p99_us / 1000, 3),
            "writer_alone_max_ms": round(alone.max_us / 1000, 3),
            "batch_size": settings.janitor_batch_size,
            "pause_ms": settings.janitor_pause_ms}
