"""``server_scale_ratio``: a warm build in a server with 50k channels ÷ 500.

Discord threads are channels, so a busy server collects thousands a month.
Two servers are seeded in one file, every channel with a row updated in the
last minutes (all inside the load window), then stm loads each server once
and warm ``build_context`` calls on both run interleaved. A build shows at
most ``max_other_channels`` other channels; its cost should not depend on how
many the server has. Also reported: rows held by each server's cached view
(bounded by ``cache_max_rows_per_view``) and the resident memory the large
view added.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.harness import cpu_ratio, current_rss_kb, interleave, ratio
from bench.seeding import TABLE, check_schema, seed_rows
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.store import Stm

#: The seeded servers are numbered from here (away from other scenarios' ids).
BASE = 3_000_000
#: Channels a turn talks in (the first few of the server).
ACTIVE = 20


def _turns(server: str, count: int) -> list[Turn]:
    names = {w.channel_id(c): f"chan-{c}" for c in range(ACTIVE)}
    return [w.build_turn(server, w.channel_id(i % ACTIVE), names) for i in range(count)]


def _build(stm: Stm, turns: list[Turn]) -> Callable[[int], Awaitable[object]]:
    async def one(i: int) -> object:
        return await stm.build_context(turns[i])
    return one


async def run(cfg: RunConfig) -> dict[str, Any]:
    small, large = cfg.server_channels
    path = cfg.workdir / "server_scale.db"
    clock = ManualClock(w.EPOCH_MS)
    async with open_bench_store(sqlite_url(path), clock):
        pass  # stm's schema; rows go in directly
    check_schema(path)
    # Every seeded row older than the active channels' (below): none ties
    # with them, so both servers show the same channels, the newest.
    seed_rows(path, 0, small, updated_at_ms=w.EPOCH_MS - 1, server_base=BASE,
              per_server=small)
    seed_rows(path, 0, large, updated_at_ms=w.EPOCH_MS - 1, server_base=BASE + 1_000,
              per_server=large)
    servers = {small: w.server_id(BASE), large: w.server_id(BASE + 1_000)}
    # The channels turns happen in are the recently active ones (every turn's
    # record_turn makes its row the newest): their rows are the newest here too.
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(f"UPDATE {TABLE} SET updated_at_ms = ? WHERE channel_id IN "
                     f"({', '.join('?' for _ in range(ACTIVE))})",
                     (w.EPOCH_MS, *(w.channel_id(c) for c in range(ACTIVE))))
        conn.commit()
    # Fewer turns than the build scenario: before views were ordered, one build
    # at 50k channels took tens of milliseconds.
    per_round = max(cfg.turns // 4, 5)
    count = max(cfg.warmup, 1) + cfg.rounds * per_round
    turns = {n: _turns(server, count) for n, server in servers.items()}
    views: dict[str, Any] = {}
    async with open_bench_store(sqlite_url(path), clock) as stm:
        for n, server in servers.items():
            gc.collect()
            before = current_rss_kb()
            await stm.build_context(turns[n][0])  # loads the server's view
            gc.collect()
            view = await stm.engine.server_memories(server)
            views[str(n)] = {"rows_in_view": len(view.records),
                             "rss_growth_kb": current_rss_kb() - before}
        # Both builds must do the same work: the same channels, the same texts.
        shown = {n: [item.text for item in (await stm.build_context(turns[n][0])).memory_items]
                 for n in servers}
        stats = await interleave({f"server_build_{n}": _build(stm, turns[n]) for n in servers},
                                 rounds=cfg.rounds, turns=per_round, warmup=cfg.warmup)
    big, base = stats[f"server_build_{large}"], stats[f"server_build_{small}"]
    return {
        "server_scale_ratio": ratio(big, base),
        "server_scale_cpu_ratio": cpu_ratio(big, base),
        "server_scale": {"channels": [small, large], "views": views,
                         "max_rows_per_view": stm.settings.cache_max_rows_per_view,
                         "texts_equal": shown[small] == shown[large] and bool(shown[small])},
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
