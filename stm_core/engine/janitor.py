"""Deletes memory rows nobody touched for ``janitor_retention_days``.

A run deletes in batches and pauses between them, so turn writes queued
meanwhile get the database between batches (one big ``DELETE`` would hold the
SQLite write lock for its whole length). A batch holds at most
``janitor_batch_size`` rows and shrinks while batches take longer than
``janitor_batch_budget_ms``: how long a delete takes depends on how scattered
the old rows are, and a turn write queued behind a batch waits that long.

The pause is ``janitor_pause_ms``, stretched after a batch that ran over its
budget by as much as it ran over. Turns pay for the janitor twice: waiting
behind a batch, and later, for the WAL checkpoints its deletes make due (on
SQLite, each costs the writer a few fsyncs). Both grow with the share of time
the janitor holds the writer, which the stretched pause keeps near
budget / (budget + pause) even while batches run long (a slow disk, a large
table). A batch's time is the time it held the database, as the adapter
measured it (``TimedPurge``): waiting behind turn writes for SQLite's one
writer is not the janitor's cost, and counting it would shrink its batches
and stretch its pauses the busier the bot is.

Afterwards the cache drops every row older than the cutoff: it must never
hold a row the database no longer has. A run that stopped half-way (failed,
cancelled) says so in the log, and the cached views holding such rows reload
on next use, since only some of them are gone; the next run finishes the job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from stm_core._util import telemetry
from stm_core.errors import StorageError
from stm_core.storage.protocol import StorageInventory, TimedPurge

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from stm_core.engine.core import Engine

log = logging.getLogger("stm.janitor")


class BatchSizer:
    """Halves the batch while batches run over budget, grows it back (up to
    ``maximum``) while they take under half of it."""

    MINIMUM = 10

    def __init__(self, *, maximum: int, budget_s: float) -> None:
        self.maximum = maximum
        self.budget_s = budget_s
        self.size = min(maximum, 100)

    def observe(self, elapsed_s: float) -> None:
        if elapsed_s > self.budget_s:
            self.size = max(min(self.MINIMUM, self.maximum), self.size // 2)
        elif elapsed_s < self.budget_s / 2:
            self.size = min(self.maximum, self.size + max(1, self.size // 2))


#: A pause is stretched at most this many times.
MAX_PAUSE_STRETCH = 10.0


def pause_after(elapsed_s: float, *, pause_s: float, budget_s: float) -> float:
    """The pause after a batch that took ``elapsed_s``: ``pause_s``, times how
    many budgets the batch took (at least 1, at most ``MAX_PAUSE_STRETCH``)."""
    return pause_s * min(MAX_PAUSE_STRETCH, max(1.0, elapsed_s / budget_s))


def held_for(adapter: object, wall_s: float) -> float:
    """How long the batch just run held the database: what the adapter
    measured (``TimedPurge``), else the call's wall time."""
    held = adapter.last_purge_seconds if isinstance(adapter, TimedPurge) else None
    return wall_s if held is None else held


class Janitor:
    """Purges old rows now (:meth:`run_once`) or on an interval (:meth:`start`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._task: asyncio.Task[None] | None = None
        #: Completed runs of the interval task (failed ones included).
        self.runs = 0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def would_remove(self) -> int:
        """How many rows :meth:`run_once` would delete now (a preview; needs the
        adapter's :class:`~stm_core.storage.protocol.StorageInventory`)."""
        adapter = self.engine.adapter
        if not isinstance(adapter, StorageInventory):
            raise StorageError(f"the {adapter.name} storage adapter cannot preview the janitor "
                               "(it does not implement StorageInventory)")
        return await adapter.count_older_than(
            self.engine.clock.now_ms() - self.engine.settings.retention_ms)

    async def run_once(self, progress: Callable[[int], None] | None = None) -> int:
        """Delete every row untouched since the retention cutoff; returns how many.

        ``progress`` is called with the running total after each batch.
        """
        with telemetry.span("stm.janitor.run") as span:
            total = await self._purge(progress, span)
        telemetry.counts.janitor_runs += 1
        return total

    async def _purge(self, progress: Callable[[int], None] | None, span: Span | None) -> int:
        settings = self.engine.settings
        cutoff = self.engine.clock.now_ms() - settings.retention_ms
        pause_s = settings.janitor_pause_ms / 1000
        budget_s = settings.janitor_batch_budget_ms / 1000
        sizer = BatchSizer(maximum=settings.janitor_batch_size, budget_s=budget_s)
        total = batches = 0
        finished = False
        adapter = self.engine.adapter
        since = self.engine.change_mark()
        try:
            while True:
                started = time.perf_counter()
                deleted = await adapter.purge_older_than(cutoff, batch_size=sizer.size)
                elapsed = held_for(adapter, time.perf_counter() - started)
                sizer.observe(elapsed)
                if deleted == 0:
                    finished = True
                    break
                total += deleted
                telemetry.counts.janitor_rows += deleted
                batches += 1
                if progress is not None:
                    progress(total)
                await asyncio.sleep(pause_after(elapsed, pause_s=pause_s, budget_s=budget_s))
        finally:
            # The cache must never hold a row the database no longer has.
            self.engine.purged(cutoff, since, finished=finished)
            if span is not None:
                span.set_attributes({"stm.rows_deleted": total, "stm.batches": batches,
                                     "stm.cutoff_ms": cutoff})
            if not finished:
                log.warning("janitor run stopped after deleting %d memory rows; rows untouched "
                            "since %s are left for the next run", total,
                            _cutoff_text(cutoff, settings.janitor_retention_days))
        if total:
            log.info("janitor deleted %d memory rows untouched since %s", total,
                     _cutoff_text(cutoff, settings.janitor_retention_days))
        return total

    def start(self, interval_s: float | None = None, first_delay_s: float = 60) -> None:
        """Run every ``interval_s`` (default ``janitor_interval_hours``), the first
        time after ``first_delay_s``. A second call while running does nothing."""
        if self.running:
            log.warning("janitor already running; start() ignored")
            return
        interval = (self.engine.settings.janitor_interval_hours * 3600 if interval_s is None
                    else interval_s)
        self._task = asyncio.get_running_loop().create_task(
            self._loop(interval, first_delay_s), name="stm-janitor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        # wait() neither raises the task's cancellation nor swallows our own.
        await asyncio.wait([task])

    async def _loop(self, interval_s: float, first_delay_s: float) -> None:
        await asyncio.sleep(first_delay_s)
        while True:
            try:
                await self.run_once()
            except Exception:
                # Logged, not raised: the next run may well succeed.
                log.exception("janitor run failed; retrying in %.0f s", interval_s)
            self.runs += 1
            await asyncio.sleep(interval_s)


def _cutoff_text(cutoff_ms: int, retention_days: float) -> str:
    """The cutoff as an operator reads it: ``2026-09-05 14:00 UTC (90 days ago)``."""
    when = datetime.fromtimestamp(cutoff_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{when} ({retention_days:g} days ago)"
