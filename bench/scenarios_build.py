"""``build_ratio`` and ``db_calls_per_warm_build``.

A warm ``stm.build_context`` for a typical server (3 other channels with
summaries and 10 messages, 5 categories, the nudge due, extra plugins
registered), in both render modes, against a hand-written build producing the
same texts. The texts are compared once before anything is timed.
"""

from __future__ import annotations

import logging
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floors import FloorResult, bench_hand_build, floor_server
from bench.harness import cpu_ratio, interleave, prepared_set_aside, ratio
from bench.stm_side import count_calls, open_bench_store, seed_typical_server
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import StmContext, Turn

log = logging.getLogger("stm.bench")

MODES = ("crude_summary", "supersede")


def as_floor_result(ctx: StmContext) -> FloorResult:
    return (tuple(item.text for item in ctx.memory_items),
            ctx.nudge_item.text if ctx.nudge_item is not None else None,
            ctx.nudge_injection_depth, ctx.memory_injection_depth)


def first_difference(ours: FloorResult, floor: FloorResult) -> dict[str, Any]:
    """Where stm's output and the hand-written one part, for the report."""
    a, b = repr(ours), repr(floor)
    at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
              min(len(a), len(b)))
    return {"at_char": at, "stm": a[max(0, at - 80):at + 120],
            "hand_written": b[max(0, at - 80):at + 120]}


async def run(cfg: RunConfig) -> dict[str, Any]:
    seeds = w.typical_server(w.EPOCH_MS)
    names = w.channel_names(seeds)
    live = seeds[0].channel_id
    servers = {mode: w.server_id(k + 1) for k, mode in enumerate(MODES)}
    # A Turn object per turn, as hosts make them: per-Turn memos start cold.
    count = max(cfg.warmup, 1) + cfg.rounds * cfg.build_turns
    fresh = {mode: [w.build_turn(server, live, names) for _ in range(count)]
             for mode, server in servers.items()}
    with prepared_set_aside():
        return await _run(cfg, seeds, servers, fresh)


async def _run(cfg: RunConfig, seeds: tuple[w.ChannelSeed, ...], servers: dict[str, str],
               fresh: dict[str, list[Turn]]) -> dict[str, Any]:
    now = w.EPOCH_MS
    clock = ManualClock(now)
    names = w.channel_names(seeds)
    live = seeds[0].channel_id
    async with open_bench_store(sqlite_url(cfg.workdir / "build.db"), clock) as stm:
        for mode, server in servers.items():
            await seed_typical_server(stm, server, seeds, now_ms=now, render_mode=mode)
        hand = bench_hand_build({server: floor_server(seeds, now_ms=now, render_mode=mode)
                                 for mode, server in servers.items()},
                                channel_names=names, now_ms=now)
        turns = {mode: w.build_turn(server, live, names) for mode, server in servers.items()}

        checks: dict[str, Any] = {}
        for mode, server in servers.items():
            ours = as_floor_result(await stm.build_context(turns[mode]))
            floor = hand.build(server, live)
            equal = ours == floor and len(ours[0]) == 2 and ours[1] is not None
            checks[mode] = {"texts_equal": equal, "items": len(ours[0]),
                            "chars": sum(len(t) for t in ours[0]) + len(ours[1] or "")}
            if not equal:
                checks[mode]["difference"] = first_difference(ours, floor)
                log.warning("build texts differ in %s mode: %s", mode,
                            checks[mode]["difference"])

        proxy = count_calls(stm)

        def stm_build(mode: str) -> Any:
            mode_turns = fresh[mode]

            async def one(i: int) -> None:
                await stm.build_context(mode_turns[i])
            return one

        def hand_build(mode: str) -> Any:
            server = servers[mode]

            def one(i: int) -> None:
                hand.build(server, live)
            return one

        scenarios = {}
        for mode in MODES:
            scenarios[f"stm_build_{mode}"] = stm_build(mode)
            scenarios[f"hand_build_{mode}"] = hand_build(mode)
        stats = await interleave(scenarios, rounds=cfg.rounds, turns=cfg.build_turns,
                                 warmup=cfg.warmup)
        timed_builds = len(MODES) * (cfg.rounds * cfg.build_turns + max(cfg.warmup, 1))
        calls = dict(proxy.calls)  # before the store closes (closing is a call too)
        # The proxy does see the database: the same build on a cold cache calls it.
        stm.engine.flush()
        await stm.build_context(turns[MODES[0]])
        cold_calls = proxy.total - sum(calls.values())

    ratios = {mode: ratio(stats[f"stm_build_{mode}"], stats[f"hand_build_{mode}"])
              for mode in MODES}
    cpu_ratios = {mode: cpu_ratio(stats[f"stm_build_{mode}"], stats[f"hand_build_{mode}"])
                  for mode in MODES}
    valid = all(c["texts_equal"] for c in checks.values())
    return {
        # The worse of the two modes is the headline.
        "build_ratio": max(ratios.values()),
        "build_ratio_by_mode": ratios,
        "build_cpu_ratio_by_mode": cpu_ratios,
        "build_texts": checks,
        "build_texts_equal": valid,
        "db_calls_per_warm_build": sum(calls.values()) / timed_builds,
        "db_calls_during_warm_builds": calls,
        "db_calls_cold_build": cold_calls,
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
