"""Timing, interleaving and statistics.

Scenarios run round by round in a rotated order, so a slow patch of the
machine hits every scenario alike; each turn is timed on its own with
``perf_counter_ns`` and summarised as median, p95 and p99 microseconds.
"""

from __future__ import annotations

import gc
import inspect
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import attrs

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

    @classmethod
    def of(cls, samples_ns: Sequence[int],
           rounds: Sequence[Sequence[int]] = ()) -> Stats:
        if not samples_ns:
            raise ValueError("no samples")
        us = sorted(s / 1000 for s in samples_ns)
        return cls(n=len(us), median_us=statistics.median(us),
                   p95_us=percentile(us, 95), p99_us=percentile(us, 99),
                   mean_us=statistics.fmean(us), max_us=us[-1],
                   round_medians_us=tuple(statistics.median(r) / 1000 for r in rounds if r))

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "median_us": round(self.median_us, 2),
                "p95_us": round(self.p95_us, 2), "p99_us": round(self.p99_us, 2),
                "mean_us": round(self.mean_us, 2), "max_us": round(self.max_us, 2),
                "round_medians_us": [round(m, 2) for m in self.round_medians_us]}


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def ratio(numerator: Stats, denominator: Stats) -> float:
    """Median over median, the figure every target is stated in."""
    return round(numerator.median_us / denominator.median_us, 3)


async def interleave(scenarios: Mapping[str, TurnFn | SyncTurnFn], *, rounds: int,
                     turns: int, warmup: int = 0, block: int = 25) -> dict[str, Stats]:
    """Run every scenario ``turns`` times per round, rotating the order each round.

    Within a round the scenarios take turns in blocks of ``block`` turns, so a
    burst of machine noise lands on all of them rather than on whichever ran
    through it. A scenario is an async or a plain function of the turn index;
    plain ones (the hand-written floors) are timed without an ``await``.
    Turn indexes keep counting across rounds, so a workload that maps turn
    ``i`` to channel ``i % 100`` keeps cycling through its channels.
    """
    names = list(scenarios)
    is_async = {name: inspect.iscoroutinefunction(fn) for name, fn in scenarios.items()}
    for name in names:
        for i in range(max(warmup, 1)):
            await _call(scenarios[name], i, is_async[name])
    per_round: dict[str, list[list[int]]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        samples: dict[str, list[int]] = {name: [] for name in names}
        gc.collect()
        base = warmup + r * turns
        for start in range(base, base + turns, block):
            stop = min(start + block, base + turns)
            for name in order:
                await _timed(scenarios[name], is_async[name], start, stop, samples[name])
        for name in names:
            per_round[name].append(samples[name])
    return {name: Stats.of([s for rnd in per_round[name] for s in rnd], per_round[name])
            for name in names}


async def _timed(fn: TurnFn | SyncTurnFn, is_async: bool, start: int, stop: int,
                 out: list[int]) -> None:
    clock = time.perf_counter_ns
    if is_async:
        afn = cast(TurnFn, fn)
        for i in range(start, stop):
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
