"""``telemetry_overhead``: what the OpenTelemetry instrumentation costs a turn
when the host configured no SDK (the usual case).

Two stores on two SQLite files run the same host turns (``record_turn`` +
warm ``build_context``), interleaved: one as shipped, one with the
instrumentation taken out (the per-turn calls go straight to the pipeline and
the adapter's reads and writes skip their span). Wall and CPU time per turn
are compared; ``telemetry_build_overhead`` does the same for warm builds
alone, where the relative cost is largest. Above 1 means the instrumentation
costs that share. The cache hit counters stay in both (one integer each).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.harness import cpu_ratio, interleave, ratio
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, RecordResult, StmContext, Turn
from stm_core.store import Stm

SERVER = w.server_id(4_000_000)
CHANNELS = 20
WINDOWS = 16


def strip_instrumentation(stm: Stm) -> None:
    """The same store without spans: the per-turn methods as they were before
    instrumentation (their local import included)."""
    async def bare_build(turn: Turn) -> StmContext:
        from stm_core.pipeline.build import build_context

        return await build_context(stm.engine, turn)

    async def bare_record(turn: Turn, history: Sequence[HistoryMessage],
                          responses: Sequence[PersonaResponse], *, stop_response: bool = False,
                          privacy_full: bool = False) -> RecordResult:
        from stm_core.pipeline.record import record_turn

        return await record_turn(stm.engine, turn, history, responses, stop_response=stop_response,
                                 privacy_full=privacy_full)

    stm.build_context = bare_build  # type: ignore[method-assign]
    stm.record_turn = bare_record  # type: ignore[method-assign]
    adapter: Any = stm.adapter
    adapter._read, adapter._write = adapter._run_read, adapter._run_write


def _turn_fn(stm: Stm, turns: list[Turn]) -> Callable[[int], Awaitable[None]]:
    histories = [w.history(i) for i in range(WINDOWS)]
    replies = [w.responses(i) for i in range(WINDOWS)]

    async def one(i: int) -> None:
        turn = turns[i % len(turns)]
        await stm.record_turn(turn, histories[i % WINDOWS], replies[i % WINDOWS])
        await stm.build_context(turn)
    return one


def _build_fn(stm: Stm, turns: list[Turn]) -> Callable[[int], Awaitable[object]]:
    async def one(i: int) -> object:
        return await stm.build_context(turns[i % len(turns)])
    return one


async def run(cfg: RunConfig) -> dict[str, Any]:
    names = {w.channel_id(c): f"chan-{c}" for c in range(CHANNELS)}
    turns = [w.build_turn(SERVER, w.channel_id(c), names) for c in range(CHANNELS)]
    async with AsyncExitStack() as stack:
        stores = {}
        for label in ("instrumented", "bare"):
            clock = ManualClock(w.EPOCH_MS)
            stores[label] = await stack.enter_async_context(
                open_bench_store(sqlite_url(cfg.workdir / f"telemetry_{label}.db"), clock))
        strip_instrumentation(stores["bare"])
        for stm in stores.values():  # rows in every channel, views cached
            await _turn_fn(stm, turns)(0)
            for i in range(CHANNELS):
                await _turn_fn(stm, turns)(i)
        turn_stats = await interleave(
            {f"telemetry_turn_{k}": _turn_fn(s, turns) for k, s in stores.items()},
            rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup, placement="one_cpu")
        build_stats = await interleave(
            {f"telemetry_build_{k}": _build_fn(s, turns) for k, s in stores.items()},
            rounds=cfg.rounds, turns=cfg.build_turns, warmup=cfg.warmup)
    t_on, t_off = turn_stats["telemetry_turn_instrumented"], turn_stats["telemetry_turn_bare"]
    b_on, b_off = build_stats["telemetry_build_instrumented"], build_stats["telemetry_build_bare"]
    return {
        "telemetry_overhead": ratio(t_on, t_off),
        "telemetry_overhead_cpu": cpu_ratio(t_on, t_off),
        "telemetry_build_overhead": ratio(b_on, b_off),
        "telemetry_build_overhead_cpu": cpu_ratio(b_on, b_off),
        "scenarios": {n: s.to_json() for n, s in {**turn_stats, **build_stats}.items()},
    }
