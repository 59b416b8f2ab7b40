"""The write path: ``record_turn`` and ``apply_tool_call`` against the raw drivers.

Per turn ``i`` the guild turn talks in channel ``i % 100``: stm writes the
server-scope row (counter + 1) and the user's copy, with the 10 last messages
as JSON, in one transaction; the raw writer does the same two upserts on the
bare driver. Also the concurrent throughput of 100 channels at once.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floors import RawPostgres, RawSqlite
from bench.harness import interleave, ratio
from bench.stm_side import open_bench_store
from bench.urls import asyncpg_dsn, sqlite_url, stm_postgres_url
from stm_core.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import Stm

SERVER = w.server_id(500)
#: Distinct message windows cycled through, so payloads differ from turn to turn.
WINDOWS = 16


class Workload:
    """Turns, histories and replies prepared before timing (host-side work)."""

    def __init__(self, channels: int = w.CHANNELS, server: str = SERVER) -> None:
        self.server = server
        self.channels = [w.channel_id(n) for n in range(channels)]
        names = {c: f"chan-{n}" for n, c in enumerate(self.channels)}
        self.turns = [w.build_turn(server, c, names) for c in self.channels]
        self.names = names
        self.histories: list[tuple[HistoryMessage, ...]] = [
            w.history(k * 3) for k in range(WINDOWS)]
        self.replies: list[tuple[PersonaResponse, ...]] = [
            w.responses(k * 3) for k in range(WINDOWS)]

    def turn(self, i: int) -> Turn:
        return self.turns[i % len(self.turns)]

    def fresh_turns(self, count: int) -> list[Turn]:
        """One new Turn object per tool call (the once-per-turn rule is per object)."""
        return [w.build_turn(self.server, self.channels[i % len(self.channels)], self.names)
                for i in range(count)]


def stm_record(stm: Stm, clock: ManualClock, load: Workload) -> Callable[[int], Awaitable[None]]:
    async def one(i: int) -> None:
        clock.set(w.EPOCH_MS + i * 1000)
        await stm.record_turn(load.turn(i), load.histories[i % WINDOWS],
                              load.replies[i % WINDOWS])
    return one


def raw_record(raw: RawSqlite | RawPostgres, load: Workload) -> Callable[[int], Awaitable[None]]:
    async def one(i: int) -> None:
        await raw.record(load.server, load.channels[i % len(load.channels)], w.USER_ID,
                         load.histories[i % WINDOWS], load.replies[i % WINDOWS],
                         w.EPOCH_MS + i * 1000)
    return one


async def sqlite_ratios(cfg: RunConfig) -> dict[str, Any]:
    """record_turn and the summary tool write vs raw aiosqlite, interleaved."""
    load = Workload(channels=cfg.channels)
    clock = ManualClock(w.EPOCH_MS)
    total = cfg.rounds * cfg.turns + max(cfg.warmup, 1)
    tool_turns = load.fresh_turns(total)
    summaries = [w.summary_text(k) for k in range(WINDOWS)]
    raw = await RawSqlite(str(cfg.workdir / "raw_record.db")).open()
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "stm_record.db"), clock) as stm:
            failures: list[str] = []

            async def stm_tool(i: int) -> None:
                clock.set(w.EPOCH_MS + i * 1000)
                result = await stm.apply_tool_call(tool_turns[i],
                                                   {"summary": summaries[i % WINDOWS]})
                if not result.ok:
                    failures.append(f"{result.code}: {result.message}")

            async def raw_tool(i: int) -> None:
                await raw.write_summary(load.server, load.channels[i % len(load.channels)],
                                        w.USER_ID, summaries[i % WINDOWS], w.EPOCH_MS + i * 1000)

            stats = await interleave({
                "stm_record_turn_sqlite": stm_record(stm, clock, load),
                "raw_aiosqlite_record": raw_record(raw, load),
                "stm_tool_write_sqlite": stm_tool,
                "raw_aiosqlite_tool_write": raw_tool,
            }, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup)
    finally:
        await raw.close()
    return {
        "record_ratio_sqlite": ratio(stats["stm_record_turn_sqlite"],
                                     stats["raw_aiosqlite_record"]),
        "tool_write_ratio_sqlite": ratio(stats["stm_tool_write_sqlite"],
                                         stats["raw_aiosqlite_tool_write"]),
        # A refused call writes nothing and would flatter the ratio.
        "tool_write_failures": len(failures),
        "tool_write_failure_examples": sorted(set(failures))[:3],
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }


async def postgres_ratio(cfg: RunConfig) -> dict[str, Any]:
    """record_turn on PostgreSQL vs raw asyncpg, each in a schema of its own."""
    if not cfg.postgres_url:
        return {"record_ratio_postgres": None,
                "record_ratio_postgres_skipped": "STM_TEST_POSTGRES_URL is not set"}
    import asyncpg

    dsn = asyncpg_dsn(cfg.postgres_url)
    tag = uuid.uuid4().hex[:10]
    stm_schema, raw_schema = f"stm_bench_{tag}", f"stm_bench_raw_{tag}"
    try:
        admin = await asyncpg.connect(dsn)
    except (OSError, asyncpg.PostgresError) as exc:
        return {"record_ratio_postgres": None,
                "record_ratio_postgres_skipped": f"PostgreSQL unreachable: {exc}"}
    load = Workload(channels=cfg.channels)
    clock = ManualClock(w.EPOCH_MS)
    raw = RawPostgres(dsn, raw_schema)
    try:
        await admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{stm_schema}"')
        await raw.open()
        async with open_bench_store(stm_postgres_url(cfg.postgres_url, stm_schema),
                                    clock) as stm:
            stats = await interleave({
                "stm_record_turn_postgres": stm_record(stm, clock, load),
                "raw_asyncpg_record": raw_record(raw, load),
            }, rounds=cfg.pg_rounds, turns=cfg.turns, warmup=cfg.warmup)
    finally:
        await raw.close()
        await admin.execute(f'DROP SCHEMA IF EXISTS "{stm_schema}" CASCADE')
        await admin.close()
    return {
        "record_ratio_postgres": ratio(stats["stm_record_turn_postgres"],
                                       stats["raw_asyncpg_record"]),
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }


async def concurrent_throughput(cfg: RunConfig) -> dict[str, Any]:
    """100 channels writing at once through stm vs raw aiosqlite one turn at a time."""
    tasks, per_task = cfg.concurrent_tasks, cfg.concurrent_turns
    load = Workload(channels=tasks)
    clock = ManualClock(w.EPOCH_MS)
    stm_rates: list[float] = []
    raw_rates: list[float] = []
    raw = await RawSqlite(str(cfg.workdir / "raw_concurrent.db")).open()
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "stm_concurrent.db"),
                                    clock) as stm:
            async def channel_task(c: int) -> None:
                for k in range(per_task):
                    await stm.record_turn(load.turns[c], load.histories[k % WINDOWS],
                                          load.replies[k % WINDOWS])

            for _ in range(cfg.concurrent_runs):
                start = time.perf_counter()
                await asyncio.gather(*(channel_task(c) for c in range(tasks)))
                stm_rates.append(tasks * per_task / (time.perf_counter() - start))

                write = raw_record(raw, load)
                start = time.perf_counter()
                for i in range(tasks * per_task):
                    await write(i)
                raw_rates.append(tasks * per_task / (time.perf_counter() - start))
    finally:
        await raw.close()
    stm_rate, raw_rate = statistics.median(stm_rates), statistics.median(raw_rates)
    return {
        "concurrent_throughput_ratio": round(stm_rate / raw_rate, 3),
        "concurrent": {"tasks": tasks, "turns_per_task": per_task,
                       "stm_turns_per_s": round(stm_rate, 1),
                       "raw_sequential_turns_per_s": round(raw_rate, 1),
                       "runs": cfg.concurrent_runs},
    }

