"""``out_of_order_place_us``: what a write that lands behind newer rows costs
the cached view it is mirrored into.

A cached view keeps its rows in ``updated_at_ms`` order (a warm build walks
it newest first). A write stamped earlier than rows already there (another
process whose clock is behind, a write that finished late) has to go before
them. Each scenario writes the oldest row of a full view again (1,000 rows,
the default ``cache_max_rows_per_view``), stamped so that exactly ``k`` rows
stay newer than it: ``k = 0`` is the usual in-order write.
"""

from __future__ import annotations

from typing import Any

from bench.config import RunConfig
from bench.harness import interleave
from stm_core.cache import MemoryView
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryRecord

#: Rows newer than each write, per scenario.
BEHIND = (0, 10, 100, 999)
#: Time between the loaded rows: room for every write of a run between two.
STEP_MS = 1_000_000


def _writer(rows: int, behind: int) -> Any:
    view = MemoryView([MemoryRecord(key=MemoryKey.server("g", f"c{n}", None),
                                    updated_at_ms=n * STEP_MS) for n in range(rows)],
                      max_rows=rows)
    # Just after the row ``behind + 1`` from the end, rising by 1 ms a write,
    # so the ``behind`` newest rows stay newer and earlier writes stay older.
    start = (rows - behind - 1) * STEP_MS + 1 if behind else rows * STEP_MS

    def one(i: int) -> None:
        oldest = next(iter(view.records))
        view.apply(MemoryRecord(key=oldest, updated_at_ms=start + i, rev=i + 2))
    return one


async def run(cfg: RunConfig) -> dict[str, Any]:
    rows = Settings().cache_max_rows_per_view
    stats = await interleave({f"behind_{k}": _writer(rows, k) for k in BEHIND},
                             rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup)
    return {
        "out_of_order_place_us": {name: round(s.median_us, 2)
                                  for name, s in stats.items()},
        "out_of_order_view_rows": rows,
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
