"""The cache bound: touch far more servers and users than the cache may hold
and watch the process's resident memory stay flat."""

from __future__ import annotations

import gc
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.harness import current_rss_kb
from bench.scenarios_record import WINDOWS
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.settings import Settings


def _turn(n: int) -> Turn:
    channel = w.channel_id(n % w.CHANNELS)
    return Turn(user_id=f"{300_000_000_000_000_000 + n}", channel_id=channel,
                server_id=w.server_id(2_000_000 + n), persona_id=w.PERSONA_ID,
                persona_lineage_id=w.LINEAGE_ID, bot_name=w.BOT,
                triggerer_name=w.USER_NAME, provider="openai",
                channel_names={channel: "general"})


async def run(cfg: RunConfig) -> dict[str, Any]:
    bound = cfg.cache_bound
    settings = Settings(cache_max_servers=bound, cache_max_users=bound)
    clock = ManualClock(w.EPOCH_MS)
    histories = [w.history(k) for k in range(WINDOWS)]
    replies = [w.responses(k) for k in range(WINDOWS)]
    rss: dict[str, int] = {}
    async with open_bench_store(sqlite_url(cfg.workdir / "cache.db"), clock,
                                settings=settings) as stm:
        async def touch(n: int) -> None:
            turn = _turn(n)
            await stm.record_turn(turn, histories[n % WINDOWS], replies[n % WINDOWS])
            await stm.build_context(turn)

        # Fill the cache to its bound twice over, then measure from there.
        for n in range(2 * bound):
            await touch(n)
        gc.collect()
        rss["after_filling_cache_kb"] = current_rss_kb()
        for n in range(2 * bound, 2 * bound + cfg.cache_touch):
            await touch(n)
        gc.collect()
        rss["after_touching_all_kb"] = current_rss_kb()
        sizes = {"servers": len(stm.cache.servers), "settings": len(stm.cache.settings),
                 "users": len(stm.cache.users)}
    growth = rss["after_touching_all_kb"] - rss["after_filling_cache_kb"]
    return {"cache_bound": {"bound": bound, "servers_touched": 2 * bound + cfg.cache_touch,
                            "cache_sizes_after": sizes, **rss, "rss_growth_kb": growth,
                            "within_bound": all(v <= bound for v in sizes.values())}}
