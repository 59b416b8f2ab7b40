"""Timing, interleaving and statistics.

Scenarios run round by round in a rotated order, so a slow patch of the
machine hits every scenario alike; each turn is timed on its own with
``perf_counter_ns`` and summarised as median, p95 and p99 microseconds.

Wall time on a shared 2-vCPU machine depends on what the other vCPU does (a
thread hop costs about twice as much when it is idle), so every block of
turns is also charged the process CPU time it used (``process_time``: all
threads, so a floor's or stm's worker thread counts). CPU per turn does not
swing with an idle vCPU; ratios of it are the steadier figures.
"""

from __future__ import annotations

import gc
import inspect
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import attrs

from bench import placement as bench_placement

#: One timed unit of work; receives the global turn index.
TurnFn = Callable[[int], Awaitable[object]]
SyncTurnFn = Callable[[int], object]


@attrs.frozen(kw_only=True)
class Stats:
    """Per-turn timings of one scenario, in microseconds."""

    n: int
    median_us: float
    p95_us: float
    p99_us: float
    mean_us: float
    max_us: float
    #: Median of each round, to show the spread between rounds.
    round_medians_us: tuple[float, ...] = ()
    #: Median over blocks of the process CPU time per turn (``None``: not measured).
    cpu_us: float | None = None
    #: Median wall time of each block (what the bimodality check looks at).
    block_medians_us: tuple[float, ...] = ()

    @classmethod
    def of(cls, samples_ns: Sequence[int], rounds: Sequence[Sequence[int]] = (),
           cpu_per_turn_ns: Sequence[float] = (),
           block_medians_ns: Sequence[float] = ()) -> Stats:
        if not samples_ns:
            raise ValueError("no samples")
        us = sorted(s / 1000 for s in samples_ns)
        return cls(n=len(us), median_us=statistics.median(us),
                   p95_us=percentile(us, 95), p99_us=percentile(us, 99),
                   mean_us=statistics.fmean(us), max_us=us[-1],
                   round_medians_us=tuple(statistics.median(r) / 1000 for r in rounds if r),
                   cpu_us=statistics.median(cpu_per_turn_ns) / 1000 if cpu_per_turn_ns
                   else None,
                   block_medians_us=tuple(b / 1000 for b in block_medians_ns))

    @property
    def bimodal(self) -> bool:
        return is_bimodal(self.block_medians_us)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.n, "median_us": round(self.median_us, 2),
            "p95_us": round(self.p95_us, 2), "p99_us": round(self.p99_us, 2),
            "mean_us": round(self.mean_us, 2), "max_us": round(self.max_us, 2),
            "round_medians_us": [round(m, 2) for m in self.round_medians_us]}
        if self.cpu_us is not None:
            out["cpu_us_per_turn"] = round(self.cpu_us, 2)
        if self.block_medians_us:
            out["bimodal"] = self.bimodal
        return out


#: Sarle's bimodality coefficient above this suggests two modes (5/9: uniform).
BIMODALITY_COEFFICIENT = 5 / 9
#: ...and the two modes must be this far apart to matter (p90 / p10 of blocks).
BIMODAL_SPREAD = 1.25


def is_bimodal(values: Sequence[float]) -> bool:
    """Block medians that fall into two groups: the machine changed state
    during the run (typically the other vCPU going idle and busy)."""
    n = len(values)
    if n < 8:
        return False
    ordered = sorted(values)
    low, high = percentile(ordered, 10), percentile(ordered, 90)
    if low <= 0 or high / low < BIMODAL_SPREAD:
        return False
    mean = statistics.fmean(values)
    m2 = sum((v - mean) ** 2 for v in values) / n
    if m2 == 0:
        return False
    m3 = sum((v - mean) ** 3 for v in values) / n
    m4 = sum((v - mean) ** 4 for v in values) / n
    skew: float = m3 / m2 ** 1.5
    excess: float = m4 / m2 ** 2 - 3
    coefficient = (skew ** 2 + 1) / (excess + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    return bool(coefficient > BIMODALITY_COEFFICIENT)


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def ratio(numerator: Stats, denominator: Stats) -> float:
    """Median over median, the figure every target is stated in."""
    return round(numerator.median_us / denominator.median_us, 3)


def cpu_ratio(numerator: Stats, denominator: Stats) -> float | None:
    """CPU time per turn over CPU time per turn (steadier on a shared machine)."""
    if numerator.cpu_us is None or not denominator.cpu_us:
        return None
    return round(numerator.cpu_us / denominator.cpu_us, 3)


@contextmanager
def prepared_set_aside() -> Iterator[None]:
    """What exists on entry stays out of the collector's passes until the
    block ends (even when it fails).

    A scenario enters it once its workload is prepared (a Turn per index,
    histories, replies), before any store opens: a host makes one Turn a turn
    and lets it go, while the bench holds thousands for the whole run, and
    every full collection during timing would walk them at the expense of
    whichever side allocates more. The stores' own state is created after
    and is collected as usual.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


#: Where ``interleave`` runs the threads (see :mod:`bench.placement`).
PLACEMENTS = ("one_cpu", "across_cpus")


async def interleave(scenarios: Mapping[str, TurnFn | SyncTurnFn], *, rounds: int,
                     turns: int, warmup: int = 0, block: int = 25,
                     placement: str | None = None, first: int = 0,
                     pause: Callable[[], Awaitable[None]] | None = None) -> dict[str, Stats]:
    """Run every scenario ``turns`` times per round, rotating the order each round.

    Within a round the scenarios take turns in blocks of ``block`` turns, so a
    burst of machine noise lands on all of them rather than on whichever ran
    through it. A scenario is an async or a plain function of the turn index;
    plain ones (the hand-written floors) are timed without an ``await``.
    Turn indexes start at ``first`` and keep counting across rounds, so a
    workload that maps turn ``i`` to channel ``i % 100`` keeps cycling through
    its channels. ``placement`` (one of ``PLACEMENTS``): where the threads of
    the process run meanwhile, for comparisons whose turns hand work to a
    thread one at a time (:mod:`bench.placement`). ``pause``, when given, is
    awaited before every timed turn, untimed (a host awaiting its model).
    """
    if placement == "one_cpu":
        with bench_placement.one_cpu():
            return await _interleave(scenarios, rounds, turns, warmup, block, first, None,
                                     pause)
    if placement == "across_cpus":
        with bench_placement.across_cpus() as place:
            return await _interleave(scenarios, rounds, turns, warmup, block, first, place,
                                     pause)
    if placement is not None:
        raise ValueError(f"placement must be one of {PLACEMENTS} or None, got {placement!r}")
    return await _interleave(scenarios, rounds, turns, warmup, block, first, None, pause)


async def _interleave(scenarios: Mapping[str, TurnFn | SyncTurnFn], rounds: int, turns: int,
                      warmup: int, block: int, first: int,
                      place: Callable[[], None] | None,
                      pause: Callable[[], Awaitable[None]] | None = None) -> dict[str, Stats]:
    names = list(scenarios)
    is_async = {name: inspect.iscoroutinefunction(fn) for name, fn in scenarios.items()}
    for name in names:
        for i in range(first, first + max(warmup, 1)):
            await _call(scenarios[name], i, is_async[name])
    per_round: dict[str, list[list[int]]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    blocks: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        samples: dict[str, list[int]] = {name: [] for name in names}
        gc.collect()
        base = first + warmup + r * turns
        for start in range(base, base + turns, block):
            stop = min(start + block, base + turns)
            for name in order:
                if place is not None:  # threads started since go where the others are
                    place()
                out = samples[name]
                cpu_start = time.process_time_ns()
                await _timed(scenarios[name], is_async[name], start, stop, out, pause)
                cpu[name].append((time.process_time_ns() - cpu_start) / (stop - start))
                blocks[name].append(statistics.median(out[start - base:]))
        for name in names:
            per_round[name].append(samples[name])
    return {name: Stats.of([s for rnd in per_round[name] for s in rnd], per_round[name],
                           cpu[name], blocks[name])
            for name in names}


async def _timed(fn: TurnFn | SyncTurnFn, is_async: bool, start: int, stop: int,
                 out: list[int], pause: Callable[[], Awaitable[None]] | None = None) -> None:
    clock = time.perf_counter_ns
    if is_async:
        afn = cast(TurnFn, fn)
        for i in range(start, stop):
            if pause is not None:
                await pause()
            begin = clock()
            await afn(i)
            out.append(clock() - begin)
    else:
        for i in range(start, stop):
            begin = clock()
            fn(i)
            out.append(clock() - begin)


async def _call(fn: TurnFn | SyncTurnFn, i: int, is_async: bool) -> None:
    if is_async:
        await cast(TurnFn, fn)(i)
    elif inspect.isawaitable(result := fn(i)):
        # A plain function returning a coroutine would be timed without its work.
        await result
        raise TypeError(f"{fn!r} returns an awaitable; make it an async def")


def current_rss_kb() -> int:
    """Resident set size of this process now (Linux ``/proc``; peak RSS elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
