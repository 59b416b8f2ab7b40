"""``out_of_order_place_us``: what a write that lands behind newer rows costs
the cached view it is mirrored into, against a floor.

A cached view keeps its rows in ``updated_at_ms`` order (a warm build walks
it newest first). A write stamped earlier than rows already there (another
process whose clock is behind, a write that finished late) has to go before
them. Each scenario writes the oldest row of a full view again (1,000 rows,
the default ``cache_max_rows_per_view``), stamped so that exactly ``k`` rows
stay newer than it: ``k = 0`` is the usual in-order write.

The floor does the same job with the least a Python structure needs: a dict
by key beside two lists kept in time order (times and keys), each write a
binary search and a list insert (a C memmove), the old place found by a
binary search too. It keeps nothing else (no bound, no absent keys).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import attrs

from bench.config import RunConfig
from bench.harness import cpu_ratio, interleave, ratio
from stm_core.engine.cache import MemoryView
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryRecord

#: Rows newer than each write, per scenario.
BEHIND = (0, 10, 100, 999)
#: Time between the loaded rows: room for every write of a run between two.
STEP_MS = 1_000_000


class SortedFloor:
    """Rows by key, and their keys in time order (equal times: by the keys'
    fields, the view's rule; no two rows of the timed scenarios share a time)."""

    def __init__(self, rows: list[MemoryRecord]) -> None:
        self.rows = {r.key: r for r in rows}
        self.times = [r.updated_at_ms for r in rows]
        self.keys = [r.key for r in rows]

    def oldest(self) -> MemoryKey:
        return self.keys[0]

    def apply(self, record: MemoryRecord) -> None:
        key, times, keys = record.key, self.times, self.keys
        old = self.rows.get(key)
        if old is not None:
            at = bisect_left(times, old.updated_at_ms)
            while keys[at] is not key:
                at += 1
            del times[at], keys[at]
        when = record.updated_at_ms
        at = bisect_left(times, when)
        if at < len(times) and times[at] == when:
            mine = attrs.astuple(key)
            while at < len(times) and times[at] == when and attrs.astuple(keys[at]) < mine:
                at += 1
        times.insert(at, when)
        keys.insert(at, key)
        self.rows[key] = record


def _rows(rows: int) -> list[MemoryRecord]:
    return [MemoryRecord(key=MemoryKey.server("g", f"c{n}", None), updated_at_ms=n * STEP_MS)
            for n in range(rows)]


def _start(rows: int, behind: int) -> int:
    """Just after the row ``behind + 1`` from the end, rising by 1 ms a write,
    so the ``behind`` newest rows stay newer and earlier writes stay older."""
    return (rows - behind - 1) * STEP_MS + 1 if behind else rows * STEP_MS


def _stm(rows: int, behind: int) -> Callable[[int], None]:
    view, start = MemoryView(_rows(rows), max_rows=rows), _start(rows, behind)

    def one(i: int) -> None:
        oldest = next(iter(view.records))
        view.apply(MemoryRecord(key=oldest, updated_at_ms=start + i, rev=i + 2))
    return one


def _floor(rows: int, behind: int) -> Callable[[int], None]:
    floor, start = SortedFloor(_rows(rows)), _start(rows, behind)

    def one(i: int) -> None:
        floor.apply(MemoryRecord(key=floor.oldest(), updated_at_ms=start + i, rev=i + 2))
    return one


def _rounded(us: float | None) -> float | None:
    return None if us is None else round(us, 2)


async def run(cfg: RunConfig) -> dict[str, Any]:
    rows = Settings().cache_max_rows_per_view
    scenarios: dict[str, Callable[[int], None]] = {}
    for k in BEHIND:
        scenarios[f"behind_{k}"] = _stm(rows, k)
        scenarios[f"floor_behind_{k}"] = _floor(rows, k)
    stats = await interleave(scenarios, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup)
    ours = {k: stats[f"behind_{k}"] for k in BEHIND}
    floors = {k: stats[f"floor_behind_{k}"] for k in BEHIND}
    return {
        "out_of_order_place_us": {f"behind_{k}": round(s.median_us, 2) for k, s in ours.items()},
        "out_of_order_place_cpu_us": {f"behind_{k}": _rounded(s.cpu_us)
                                      for k, s in ours.items()},
        "out_of_order_floor_us": {f"behind_{k}": round(s.median_us, 2)
                                  for k, s in floors.items()},
        "out_of_order_ratio": {f"behind_{k}": ratio(ours[k], floors[k]) for k in BEHIND},
        "out_of_order_cpu_ratio": {f"behind_{k}": cpu_ratio(ours[k], floors[k])
                                   for k in BEHIND},
        "out_of_order_view_rows": rows,
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
