"""``janitor_writer_p99_ms``: a janitor purging a large backlog while turns go on.

The backlog (rows untouched for longer than the retention) is seeded straight
into stm's table; a writer calls ``record_turn`` about every 2 ms while
``stm.janitor.run_once()`` deletes it. The writer's latency during the purge
is what a chat would feel.

Two backlog shapes: *ordered* (the stale rows are the oldest inserted, so a
batch deletes neighbouring rows) and *scattered* (stale rows spread over the
whole table, so a batch touches pages everywhere). The headline is the worse.

What is timed is the ``record_turn`` call alone: the turn's arguments are
built before the clock starts. The writer first visits every channel once
(new rows, cold loads), so neither phase counts first-visit turns, and its
tail alone is measured both before and after the purge, half the baseline
time each, so a machine that got busier or quieter meanwhile shows up on both
sides of the comparison.
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
from bench.seeding import check_schema, seed_rows
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
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

    async def visit_every_channel(self) -> None:
        """One untimed turn per channel: the timed ones find their rows and views."""
        for _ in self.load.channels:
            await self._record(self.turn)
            self.turn += 1

    def _record(self, i: int) -> Awaitable[object]:
        load = self.load
        return self.stm.record_turn(load.turn(i), load.histories[i % WINDOWS],
                                    load.replies[i % WINDOWS])

    async def write_while(self, work: Awaitable[T]) -> tuple[list[int], T]:
        """Keep writing until ``work`` finishes; returns the latencies (ns) and its result."""
        latencies: list[int] = []
        done = asyncio.Event()

        async def writer() -> None:
            while not done.is_set():
                call = self._record(self.turn)  # the turn is built before timing
                self.turn += 1
                begin = time.perf_counter_ns()
                await call
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


class TimedBatches:
    """Wraps the adapter's ``purge_older_than``: each batch's rows and wall time."""

    def __init__(self, stm: Stm) -> None:
        self.rows: list[int] = []
        self.elapsed_ns: list[int] = []
        adapter = stm.adapter
        purge = adapter.purge_older_than

        async def timed(cutoff_ms: int, *, batch_size: int) -> int:
            begin = time.perf_counter_ns()
            deleted = await purge(cutoff_ms, batch_size=batch_size)
            self.elapsed_ns.append(time.perf_counter_ns() - begin)
            self.rows.append(deleted)
            return deleted

        adapter.purge_older_than = timed  # type: ignore[method-assign]

    def summary(self) -> dict[str, Any]:
        ms = Stats.of(self.elapsed_ns)
        rows = sorted(self.rows)
        return {"purge_calls": len(rows),
                "purge_rows_p50": rows[len(rows) // 2] if rows else 0,
                "purge_ms_p50": round(ms.median_us / 1000, 3),
                "purge_ms_p99": round(ms.p99_us / 1000, 3),
                "purge_ms_max": round(ms.max_us / 1000, 3)}


def _over(samples_ns: list[int], ms: float) -> float:
    """Percentage of samples over ``ms`` (what a p99 target is about)."""
    return round(100 * sum(1 for s in samples_ns if s > ms * 1e6) / len(samples_ns), 3)


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
    async with open_bench_store(sqlite_url(path), clock, settings=settings) as stm:
        load = Workload(channels=cfg.channels)
        writer = PacedWriter(stm, load, cfg.janitor_writer_interval_ms / 1000)
        await writer.visit_every_channel()
        # The same writer alone, before and after: the machine's own tail.
        half = asyncio.sleep(cfg.janitor_baseline_s / 2)
        before, _ = await writer.write_while(half)
        rows_before = await stm.adapter.count_memories()
        batches = TimedBatches(stm)
        start = time.perf_counter()
        during, deleted = await writer.write_while(stm.janitor.run_once())
        wall = time.perf_counter() - start
        rows_after = await stm.adapter.count_memories()
        after, _ = await writer.write_while(asyncio.sleep(cfg.janitor_baseline_s / 2))
    baseline = before + after
    stats, alone = Stats.of(during), Stats.of(baseline)
    return {"backlog_shape": "scattered" if scattered else "ordered",
            "backlog_rows": cfg.janitor_backlog, "rows_before": rows_before,
            "rows_after": rows_after, "deleted": deleted,
            "run_once_returned": deleted, "janitor_wall_s": round(wall, 3),
            **batches.summary(),
            "writer_turns": stats.n,
            "writer_p50_ms": round(stats.median_us / 1000, 3),
            "writer_p99_ms": round(stats.p99_us / 1000, 3),
            "writer_max_ms": round(stats.max_us / 1000, 3),
            "writer_over_10ms_pct": _over(during, 10),
            "writer_alone_turns": alone.n,
            "writer_alone_p50_ms": round(alone.median_us / 1000, 3),
            "writer_alone_p99_ms": round(alone.p99_us / 1000, 3),
            "writer_alone_max_ms": round(alone.max_us / 1000, 3),
            "writer_alone_over_10ms_pct": _over(baseline, 10),
            "batch_size": settings.janitor_batch_size,
            "pause_ms": settings.janitor_pause_ms,
            "batch_budget_ms": settings.janitor_batch_budget_ms}
