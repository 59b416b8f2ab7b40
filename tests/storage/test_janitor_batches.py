"""Janitor batches shrink when they run long and grow back when they are quick,
and the pause after a batch that ran long is as much longer."""

from __future__ import annotations

import asyncio

import pytest

from stm_core._util.clock import ManualClock
from stm_core.engine import janitor as janitor_module
from stm_core.engine.janitor import MAX_PAUSE_STRETCH, BatchSizer, pause_after
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey

from .helpers import OpenStm


def test_batches_shrink_over_budget_and_grow_back_within_bounds() -> None:
    sizer = BatchSizer(maximum=1000, budget_s=0.004)
    assert sizer.size == 100
    for _ in range(10):
        sizer.observe(0.050)
    assert sizer.size == BatchSizer.MINIMUM
    sizer.observe(0.003)  # within budget but not under half: unchanged
    assert sizer.size == BatchSizer.MINIMUM
    for _ in range(30):
        sizer.observe(0.0005)
    assert sizer.size == 1000


def test_a_small_maximum_is_never_exceeded() -> None:
    sizer = BatchSizer(maximum=5, budget_s=0.004)
    assert sizer.size == 5
    sizer.observe(0.0)
    assert sizer.size == 5


def test_a_maximum_under_the_minimum_is_kept_when_shrinking() -> None:
    sizer = BatchSizer(maximum=5, budget_s=0.004)
    sizer.observe(0.050)
    assert sizer.size == 5


def test_the_pause_stretches_with_a_batch_over_budget_up_to_a_bound() -> None:
    assert pause_after(0.001, pause_s=0.02, budget_s=0.003) == 0.02
    assert pause_after(0.003, pause_s=0.02, budget_s=0.003) == 0.02
    assert pause_after(0.009, pause_s=0.02, budget_s=0.003) == pytest.approx(0.06)
    assert pause_after(10.0, pause_s=0.02, budget_s=0.003) == pytest.approx(
        0.02 * MAX_PAUSE_STRETCH)
    assert pause_after(0.009, pause_s=0.0, budget_s=0.003) == 0.0


class SimulatedTime:
    """Stands in for the janitor's ``time`` and ``asyncio``: batches cost
    ``per_row_s`` a row of simulated time, pauses are recorded and not slept."""

    def __init__(self, per_row_s: float, queued_s: float = 0.0) -> None:
        self.now = 0.0
        self.per_row_s = per_row_s
        #: Each batch also waits this long behind other writes (wall time only).
        self.queued_s = queued_s
        self.batches: list[tuple[int, float]] = []
        self.pauses: list[float] = []

    def perf_counter(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        await asyncio.sleep(0)

    def charge(self, adapter: object) -> None:
        purge = adapter.purge_older_than  # type: ignore[attr-defined]

        async def costed(cutoff_ms: int, *, batch_size: int) -> int:
            deleted = int(await purge(cutoff_ms, batch_size=batch_size))
            cost = max(deleted, 1) * self.per_row_s
            self.now += self.queued_s + cost
            adapter.last_purge_seconds = cost  # type: ignore[attr-defined]
            self.batches.append((deleted, cost))
            return deleted

        adapter.purge_older_than = costed  # type: ignore[attr-defined]


async def test_batches_settle_within_their_budget_and_long_ones_pause_longer(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(janitor_batch_budget_ms=3, janitor_pause_ms=20)
    simulated = SimulatedTime(per_row_s=0.0001)  # 100 rows: 10 ms
    monkeypatch.setattr(janitor_module, "time", simulated)
    monkeypatch.setattr(janitor_module, "asyncio", simulated)
    async with open_stm(sqlite_url, settings=settings) as stm:
        for first in range(0, 400, 100):
            await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g1", f"c{n}", None),
                                            messages=(), now_ms=clock.now_ms())
                               for n in range(first, first + 100)])
        clock.advance(ms=settings.retention_ms + 1)
        simulated.charge(stm.adapter)
        assert await stm.janitor.run_once() == 400
    costs = [cost for rows, cost in simulated.batches if rows]
    assert costs[0] > 0.003  # the first batch (100 rows) ran over: batches shrank
    assert all(cost <= 0.003 for cost in costs[2:])
    assert simulated.pauses[0] == pytest.approx(0.02 * costs[0] / 0.003)
    assert all(p == pytest.approx(0.02) for p in simulated.pauses[2:])


async def test_time_spent_queued_behind_other_writes_does_not_shrink_batches(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch waits 50 ms behind turn writes (a busy writer) but holds the
    database 1 ms: batches stay whole and pauses stay plain."""
    settings = Settings(janitor_batch_budget_ms=3, janitor_pause_ms=20, janitor_batch_size=50)
    simulated = SimulatedTime(per_row_s=0.00002, queued_s=0.050)
    monkeypatch.setattr(janitor_module, "time", simulated)
    monkeypatch.setattr(janitor_module, "asyncio", simulated)
    async with open_stm(sqlite_url, settings=settings) as stm:
        await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g1", f"c{n}", None),
                                        messages=(), now_ms=clock.now_ms())
                           for n in range(200)])
        clock.advance(ms=settings.retention_ms + 1)
        simulated.charge(stm.adapter)
        assert await stm.janitor.run_once() == 200
    assert [rows for rows, _ in simulated.batches] == [50, 50, 50, 50, 0]
    assert all(p == pytest.approx(0.02) for p in simulated.pauses)


async def test_an_adapter_that_does_not_time_its_purge_is_paced_by_wall_time() -> None:
    class Untimed:
        pass

    class Timed:
        last_purge_seconds: float | None = None

    assert janitor_module.held_for(Untimed(), 0.5) == 0.5
    assert janitor_module.held_for(Timed(), 0.5) == 0.5  # no batch timed yet
    timed = Timed()
    timed.last_purge_seconds = 0.001
    assert janitor_module.held_for(timed, 0.5) == 0.001
