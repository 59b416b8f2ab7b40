"""The write path: ``record_turn`` and ``apply_tool_call`` against the raw drivers.

Per turn ``i`` the guild turn talks in channel ``i % 100``: stm writes the
server-scope row (counter + 1) and the user's copy, with the 10 last messages
as JSON, in one transaction; the raw writer does the same two upserts on the
bare driver. Also the concurrent throughput of 100 channels at once.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from bench import workload as w
from bench.config import RunConfig
from bench.floor_turn import FloorTurn
from bench.floors import FloorResult, RawPostgres, RawSqlite
from bench.floors_thread import (
    InlineToolWriter,
    InlineWriter,
    PassBatchingWriter,
    RawAsyncpg,
    ThreadToolWriter,
    ThreadWriter,
)
from bench.harness import cpu_ratio, interleave, prepared_set_aside, ratio
from bench.scenarios_build import as_floor_result, first_difference
from bench.stm_side import (
    compiled_capture,
    compiled_tool_write,
    inline_share,
    open_bench_store,
    seed_typical_server,
    writer_jobs,
)
from bench.urls import asyncpg_dsn, sqlite_url, stm_postgres_url
from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.settings import Settings
from stm_core.store import Stm

log = logging.getLogger("stm.bench")
SERVER = w.server_id(500)
#: The whole-turn scenarios' server (categories configured, like the build's).
TURN_SERVER = w.server_id(501)
#: Distinct message windows cycled through, so payloads differ from turn to turn.
WINDOWS = 16


class Workload:
    """Turns, histories and replies prepared before timing (host-side work).

    Every turn index gets a Turn object of its own, as a host builds one per
    turn: per-Turn memos start cold every time, as they do in production.
    """

    def __init__(self, channels: int = w.CHANNELS, server: str = SERVER) -> None:
        self.server = server
        self.channels = [w.channel_id(n) for n in range(channels)]
        names = {c: f"chan-{n}" for n, c in enumerate(self.channels)}
        self.names = names
        self._turns: list[Turn] = []
        self.histories: list[tuple[HistoryMessage, ...]] = [
            w.history(k * 3) for k in range(WINDOWS)]
        self.replies: list[tuple[PersonaResponse, ...]] = [
            w.responses(k * 3) for k in range(WINDOWS)]

    def prepare(self, count: int) -> Workload:
        """Build the Turns of indexes ``0..count-1`` now, outside any timing."""
        self._turns.extend(self._new(i) for i in range(len(self._turns), count))
        return self

    def _new(self, i: int) -> Turn:
        return w.build_turn(self.server, self.channels[i % len(self.channels)], self.names)

    def turn(self, i: int) -> Turn:
        return self._turns[i] if i < len(self._turns) else self._new(i)

    def channel(self, i: int) -> str:
        return self.channels[i % len(self.channels)]

    def fresh_turns(self, count: int) -> list[Turn]:
        """One new Turn object per tool call (the once-per-turn rule is per object)."""
        return [self._new(i) for i in range(count)]


def turn_count(cfg: RunConfig, warmup: int = 0) -> int:
    """Turn indexes one interleaved comparison uses."""
    return max(cfg.warmup, warmup, 1) + cfg.rounds * max(cfg.turns, cfg.build_turns)


def stamp(clock: ManualClock, i: int) -> None:
    """Turn ``i``'s time: ``i`` seconds after the epoch, but never earlier than
    the turn before. Scenarios sharing a store (and its user) take turns over
    the same indexes; set from the index alone, the clock went back 25 s at
    every change of scenario and every write landed behind newer rows of the
    user's cached view, a cost no host pays (its clock moves forward) and no
    floor has."""
    clock.set(max(clock.now_ms() + 1, w.EPOCH_MS + i * 1000))


def stm_record(stm: Stm, clock: ManualClock, load: Workload) -> Callable[[int], Awaitable[None]]:
    async def one(i: int) -> None:
        stamp(clock, i)
        await stm.record_turn(load.turn(i), load.histories[i % WINDOWS],
                              load.replies[i % WINDOWS])
    return one


def stm_host_turn(stm: Stm, clock: ManualClock,
                  load: Workload) -> Callable[[int], Awaitable[StmContext]]:
    """What a host does each turn: record the last one, build this one's context."""
    async def one(i: int) -> StmContext:
        stamp(clock, i)
        turn = load.turn(i)
        await stm.record_turn(turn, load.histories[i % WINDOWS], load.replies[i % WINDOWS])
        return await stm.build_context(turn)
    return one


Recorder = RawSqlite | RawPostgres | ThreadWriter | RawAsyncpg


def raw_record(raw: Recorder, load: Workload) -> Callable[[int], Awaitable[None]]:
    async def one(i: int) -> None:
        await raw.record(load.server, load.channel(i), w.USER_ID,
                         load.histories[i % WINDOWS], load.replies[i % WINDOWS],
                         w.EPOCH_MS + i * 1000)
    return one


def floor_host_turn(floor: FloorTurn,
                    load: Workload) -> Callable[[int], Awaitable[FloorResult]]:
    async def one(i: int) -> FloorResult:
        return await floor.turn(load.channel(i), load.histories[i % WINDOWS],
                                load.replies[i % WINDOWS], w.EPOCH_MS + i * 1000)
    return one


async def thread_writer(path: Path, clock: ManualClock, *,
                        kind: type[ThreadWriter] = ThreadWriter) -> ThreadWriter:
    """A write floor on its own file, running the SQL stm compiled: on a
    dedicated thread, or with ``kind=InlineWriter`` on the caller's."""
    load = Workload(channels=1, server=w.server_id(499))
    async with open_bench_store(sqlite_url(path), clock) as stm:
        await stm_record(stm, clock, load)(0)  # creates the schema, compiles the statement
        sql = compiled_capture(stm, 1).sql
    return kind(str(path), sql).start()


async def thread_tool_writer(path: Path, clock: ManualClock, *,
                             kind: type[ThreadToolWriter] = ThreadToolWriter
                             ) -> ThreadToolWriter:
    """The tool-write floor on ``path``, running the SQL stm compiled for its
    summary tool write (one call on a server of its own compiles it); with
    ``kind=InlineToolWriter`` on the caller's thread."""
    load = Workload(channels=1, server=w.server_id(498))
    async with open_bench_store(sqlite_url(path), clock) as stm:
        result = await stm.apply_tool_call(load.fresh_turns(1)[0], {"summary": "compile"})
        if not result.ok:
            raise RuntimeError(f"the tool write did not run: {result.message}")
        sql = compiled_tool_write(stm)
    floor = kind(str(path), sql.upsert.sql, (sql.revision_insert.sql, sql.revision_trim.sql),
                 {**sql.revision_insert.constants, **sql.revision_trim.constants})
    floor.start()
    return floor


class HostTurns(NamedTuple):
    ours: Callable[[int], Awaitable[StmContext]]
    theirs: Callable[[int], Awaitable[FloorResult]]
    #: The floor ``theirs`` runs, every channel in its dict.
    floor: FloorTurn
    check: dict[str, Any]
    #: The same floor on the inline writer, when one was given.
    inline: Callable[[int], Awaitable[FloorResult]] | None = None


async def host_turn_pair(stm: Stm, clock: ManualClock, writer: ThreadWriter,
                         load: Workload, *, inline: ThreadWriter | None = None) -> HostTurns:
    """stm's host turn and the floor's on ``load.server`` (categories and render
    mode configured like the build scenario's server), every channel written
    once, and the texts of one turn compared before anything is timed; the
    same floor on ``inline`` too (its texts compared as well)."""
    await seed_typical_server(stm, load.server, (), now_ms=w.EPOCH_MS,
                              render_mode="crude_summary")
    floors = [FloorTurn(kind, load.server, load.names, render_mode="crude_summary",
                        now_ms=w.EPOCH_MS) for kind in (writer, inline) if kind is not None]
    ours = stm_host_turn(stm, clock, load)
    theirs = [floor_host_turn(floor, load) for floor in floors]
    channels = len(load.channels)
    for i in range(channels):
        await ours(i)
        for turn in theirs:
            await turn(i)
    got = as_floor_result(await ours(channels))
    wants = [await turn(channels) for turn in theirs]
    check: dict[str, Any] = {"texts_equal": all(got == want for want in wants),
                             "items": len(got[0])}
    for want in wants:
        if got != want:
            check["difference"] = first_difference(got, want)
            log.warning("host turn texts differ from the floor's: %s", check["difference"])
    return HostTurns(ours, theirs[0], floors[0], check,
                     theirs[1] if inline is not None else None)


async def sqlite_ratios(cfg: RunConfig) -> dict[str, Any]:
    """record_turn, a whole host turn and the summary tool write against the
    dedicated-thread floor (and raw aiosqlite, the older floor), interleaved."""
    load = Workload(channels=cfg.channels)
    turn_load = Workload(channels=cfg.channels, server=TURN_SERVER)
    clock = ManualClock(w.EPOCH_MS)
    total = 2 * turn_count(cfg, cfg.channels) + cfg.channels + 1  # both placements
    load.prepare(total)
    turn_load.prepare(total)
    tool_turns = load.fresh_turns(total)
    summaries = [w.summary_text(k) for k in range(WINDOWS)]
    with prepared_set_aside():
        return await _sqlite_ratios(cfg, load, turn_load, tool_turns, summaries, clock)


async def _sqlite_ratios(cfg: RunConfig, load: Workload, turn_load: Workload,
                         tool_turns: list[Turn], summaries: list[str],
                         clock: ManualClock) -> dict[str, Any]:
    raw = await RawSqlite(str(cfg.workdir / "raw_record.db")).open()
    writer = await thread_writer(cfg.workdir / "floor_record.db", clock)
    inline = await thread_writer(cfg.workdir / "floor_inline_record.db", clock,
                                 kind=InlineWriter)
    # The tool floors write the rows the record floors write, as stm's tool
    # write lands on the rows its record_turn keeps.
    tool_writer = await thread_tool_writer(cfg.workdir / "floor_record.db", clock)
    inline_tool = await thread_tool_writer(cfg.workdir / "floor_inline_record.db", clock,
                                           kind=InlineToolWriter)
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "stm_record.db"), clock) as stm:
            failures: list[str] = []

            async def stm_tool(i: int) -> None:
                stamp(clock, i)
                result = await stm.apply_tool_call(tool_turns[i],
                                                   {"summary": summaries[i % WINDOWS]})
                if not result.ok:
                    failures.append(f"{result.code}: {result.message}")

            async def floor_tool(i: int) -> None:
                await tool_writer.write_summary(load.server, load.channel(i), w.USER_ID,
                                                summaries[i % WINDOWS], w.EPOCH_MS + i * 1000)

            async def inline_floor_tool(i: int) -> None:
                await inline_tool.write_summary(load.server, load.channel(i), w.USER_ID,
                                                summaries[i % WINDOWS], w.EPOCH_MS + i * 1000)

            async def raw_tool(i: int) -> None:
                await raw.write_summary(load.server, load.channel(i), w.USER_ID,
                                        summaries[i % WINDOWS], w.EPOCH_MS + i * 1000)

            pair = await host_turn_pair(stm, clock, writer, turn_load, inline=inline)
            stm_turn, floor_turn, check = pair.ours, pair.theirs, pair.check
            assert pair.inline is not None
            jobs = writer_jobs(stm)
            stats = await interleave({
                "stm_record_turn_sqlite": stm_record(stm, clock, load),
                "floor_thread_record": raw_record(writer, load),
                "floor_inline_record": raw_record(inline, load),
                "raw_aiosqlite_record": raw_record(raw, load),
                "stm_turn_sqlite": stm_turn,
                "floor_thread_turn": floor_turn,
                "floor_inline_turn": pair.inline,
                "stm_tool_write_sqlite": stm_tool,
                "floor_thread_tool_write": floor_tool,
                "floor_inline_tool_write": inline_floor_tool,
                "raw_aiosqlite_tool_write": raw_tool,
            }, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup, placement="one_cpu")
            inline_writes = inline_share(stm, since=jobs)
            # Write and host turn again with every hop across CPUs, on fresh turns.
            across = await interleave({
                "stm_record_turn_sqlite": stm_record(stm, clock, load),
                "floor_thread_record": raw_record(writer, load),
                "stm_turn_sqlite": stm_turn,
                "floor_thread_turn": floor_turn,
            }, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup, placement="across_cpus",
                first=turn_count(cfg, cfg.channels) + cfg.channels + 1)
    finally:
        await raw.close()
        for floor in (writer, inline, tool_writer, inline_tool):
            await floor.close()
    stm_rec, floor_rec = stats["stm_record_turn_sqlite"], stats["floor_thread_record"]
    stm_turn_s, floor_turn_s = stats["stm_turn_sqlite"], stats["floor_thread_turn"]
    stm_tool_s, floor_tool_s = stats["stm_tool_write_sqlite"], stats["floor_thread_tool_write"]
    inline_rec, inline_turn = stats["floor_inline_record"], stats["floor_inline_turn"]
    inline_tool_s = stats["floor_inline_tool_write"]
    return {
        "record_ratio_sqlite": ratio(stm_rec, floor_rec),
        "record_cpu_ratio_sqlite": cpu_ratio(stm_rec, floor_rec),
        "turn_ratio_sqlite": ratio(stm_turn_s, floor_turn_s),
        "turn_cpu_ratio_sqlite": cpu_ratio(stm_turn_s, floor_turn_s),
        # Against the same SQL run on the caller's thread, as stm runs a lone write.
        "record_ratio_sqlite_inline": ratio(stm_rec, inline_rec),
        "record_cpu_ratio_sqlite_inline": cpu_ratio(stm_rec, inline_rec),
        "turn_ratio_sqlite_inline": ratio(stm_turn_s, inline_turn),
        "turn_cpu_ratio_sqlite_inline": cpu_ratio(stm_turn_s, inline_turn),
        "tool_write_ratio_sqlite_inline": ratio(stm_tool_s, inline_tool_s),
        "tool_write_cpu_ratio_sqlite_inline": cpu_ratio(stm_tool_s, inline_tool_s),
        "turn_texts": check,
        # Of stm's timed writes in these scenarios, those run inline.
        "writes_inline_share": inline_writes,
        "record_ratio_vs_aiosqlite": ratio(stm_rec, stats["raw_aiosqlite_record"]),
        "cpu_us_per_turn": stm_turn_s.cpu_us,
        "cpu_us_per_turn_floors": {
            "floor_inline_turn": inline_turn.cpu_us,
            "floor_thread_turn": floor_turn_s.cpu_us,
            "stm_record_turn_sqlite": stm_rec.cpu_us,
            "floor_inline_record": inline_rec.cpu_us,
            "floor_thread_record": floor_rec.cpu_us,
            "raw_aiosqlite_record": stats["raw_aiosqlite_record"].cpu_us},
        "across_cpus": {
            "record_ratio_sqlite": ratio(across["stm_record_turn_sqlite"],
                                         across["floor_thread_record"]),
            "turn_ratio_sqlite": ratio(across["stm_turn_sqlite"], across["floor_thread_turn"])},
        "tool_write_ratio_sqlite": ratio(stm_tool_s, floor_tool_s),
        "tool_write_cpu_ratio_sqlite": cpu_ratio(stm_tool_s, floor_tool_s),
        "tool_write_ratio_vs_aiosqlite": ratio(stm_tool_s, stats["raw_aiosqlite_tool_write"]),
        # A refused call writes nothing and would flatter the ratio.
        "tool_write_failures": len(failures),
        "tool_write_failure_examples": sorted(set(failures))[:3],
        "scenarios": {**{name: s.to_json() for name, s in stats.items()},
                      **{f"{name}_across_cpus": s.to_json() for name, s in across.items()}},
    }


async def postgres_ratio(cfg: RunConfig) -> dict[str, Any]:
    """record_turn on PostgreSQL vs stm's own statement on one raw asyncpg
    connection (and the older floor: BEGIN, two statements, COMMIT)."""
    if not cfg.postgres_url:
        return {"record_ratio_postgres": None,
                "record_ratio_postgres_skipped": "STM_TEST_POSTGRES_URL is not set"}
    import asyncpg

    dsn = asyncpg_dsn(cfg.postgres_url)
    tag = uuid.uuid4().hex[:10]
    stm_schema, raw_schema = f"stm_bench_{tag}", f"stm_bench_raw_{tag}"
    floor_schema = f"stm_bench_floor_{tag}"
    try:
        admin = await asyncpg.connect(dsn)
    except (OSError, asyncpg.PostgresError) as exc:
        return {"record_ratio_postgres": None,
                "record_ratio_postgres_skipped": f"PostgreSQL unreachable: {exc}"}
    load = Workload(channels=cfg.channels).prepare(turn_count(cfg))
    with prepared_set_aside():
        return await _postgres_ratio(cfg, load, admin, dsn, (stm_schema, raw_schema,
                                                             floor_schema))


async def _postgres_ratio(cfg: RunConfig, load: Workload, admin: Any, dsn: str,
                          schemas: tuple[str, str, str]) -> dict[str, Any]:
    assert cfg.postgres_url is not None
    stm_schema, raw_schema, floor_schema = schemas
    clock = ManualClock(w.EPOCH_MS)
    raw = RawPostgres(dsn, raw_schema)
    floor: RawAsyncpg | None = None
    quiet: RawAsyncpg | None = None
    try:
        for schema in (stm_schema, floor_schema):
            await admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        # The floor's statement: what a store on the floor's schema compiles
        # (its own notice channel, so stm's listener never hears the floor).
        async with open_bench_store(stm_postgres_url(cfg.postgres_url, floor_schema),
                                    clock) as other:
            await stm_record(other, clock, load)(0)
            compiled = compiled_capture(other, 2)
        # The same statement without the change notice (a store that announces nothing).
        quiet_settings = attrs.evolve(Settings(), cross_process_invalidation=False)
        async with open_bench_store(stm_postgres_url(cfg.postgres_url, floor_schema),
                                    clock, settings=quiet_settings) as other:
            await stm_record(other, clock, load)(1)
            quiet_sql = compiled_capture(other, 2)
        assert "pg_notify" not in quiet_sql.sql and "pg_notify" in compiled.sql
        floor = await RawAsyncpg(dsn, floor_schema, compiled.sql, compiled.slots or (),
                                 dict(compiled.constants)).open()
        quiet = await RawAsyncpg(dsn, floor_schema, quiet_sql.sql, quiet_sql.slots or (),
                                 dict(quiet_sql.constants)).open()
        await raw.open()
        async with open_bench_store(stm_postgres_url(cfg.postgres_url, stm_schema),
                                    clock) as stm:
            stats = await interleave({
                "stm_record_turn_postgres": stm_record(stm, clock, load),
                "floor_asyncpg_statement": raw_record(floor, load),
                "floor_asyncpg_statement_no_notice": raw_record(quiet, load),
                "raw_asyncpg_record": raw_record(raw, load),
            }, rounds=cfg.pg_rounds, turns=cfg.turns, warmup=cfg.warmup)
    finally:
        await raw.close()
        for opened in (floor, quiet):
            if opened is not None:
                await opened.close()
        for schema in (stm_schema, floor_schema):
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.close()
    ours, base = stats["stm_record_turn_postgres"], stats["floor_asyncpg_statement"]
    no_notice = stats["floor_asyncpg_statement_no_notice"]
    return {
        "record_ratio_postgres": ratio(ours, base),
        "record_cpu_ratio_postgres": cpu_ratio(ours, base),
        # The outside run's floor: the upserts as one statement, no change notice.
        "record_ratio_postgres_no_notice": ratio(ours, no_notice),
        "record_cpu_ratio_postgres_no_notice": cpu_ratio(ours, no_notice),
        "record_ratio_postgres_vs_transaction": ratio(ours, stats["raw_asyncpg_record"]),
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }


async def _throughput(run: Callable[[int], Awaitable[object]], tasks: int,
                      per_task: int) -> tuple[float, float, float, float]:
    """Turns per second, CPU microseconds per turn, garbage collections per
    1,000 turns and their microseconds per turn, of ``tasks`` channels at once."""
    async def channel(c: int) -> None:
        for k in range(per_task):
            await run(c + k * tasks)

    with CollectorWatch() as collector:
        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(channel(c) for c in range(tasks)))
        turns = tasks * per_task
        elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    return (turns / elapsed, used * 1e6 / turns, collector.passes * 1000 / turns,
            collector.seconds * 1e6 / turns)


class CollectorWatch:
    """Counts the garbage collector's passes (any generation) while entered,
    and the time they took. With many turns in flight, every object a turn
    keeps alive across its write counts towards the next pass."""

    def __init__(self) -> None:
        self.passes = 0
        self.seconds = 0.0
        self._started = 0.0

    def _seen(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.passes += 1
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> CollectorWatch:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self._seen)


async def concurrent_throughput(cfg: RunConfig) -> dict[str, Any]:
    """100 channels at once: stm (group commit) vs the group-commit floor, for
    whole host turns and for writes alone."""
    tasks, per_task = cfg.concurrent_tasks, cfg.concurrent_turns
    load = Workload(channels=tasks, server=TURN_SERVER)
    writes = Workload(channels=tasks)
    count = tasks * (per_task + 2)
    load.prepare(count)
    writes.prepare(count)
    with prepared_set_aside():
        return await _concurrent_throughput(cfg, load, writes)


async def _concurrent_throughput(cfg: RunConfig, load: Workload,
                                 writes: Workload) -> dict[str, Any]:
    tasks, per_task = cfg.concurrent_tasks, cfg.concurrent_turns
    clock = ManualClock(w.EPOCH_MS)
    rates: dict[str, list[tuple[float, float, float, float]]] = {
        name: [] for group in PAIRS for name in group}
    writer = await thread_writer(cfg.workdir / "floor_concurrent.db", clock)
    best = await thread_writer(cfg.workdir / "floor_concurrent_best.db", clock,
                               kind=PassBatchingWriter)
    try:
        async with open_bench_store(sqlite_url(cfg.workdir / "stm_concurrent.db"),
                                    clock) as stm:
            pair = await host_turn_pair(stm, clock, writer, load)
            stm_turn, floor_turn = pair.ours, pair.theirs
            best_turn = floor_host_turn(
                FloorTurn(best, load.server, load.names, render_mode="crude_summary",
                          now_ms=w.EPOCH_MS), load)
            runs = {"stm_turns": stm_turn, "floor_turns": floor_turn,
                    "best_floor_turns": best_turn,
                    "stm_writes": stm_record(stm, clock, writes),
                    "floor_writes": raw_record(writer, writes),
                    "best_floor_writes": raw_record(best, writes)}
            for i in range(len(load.channels)):  # the best floor's views, as the others'
                await best_turn(i)
            jobs, batches = writer_jobs(stm), stm_batches(stm)
            for r in range(cfg.concurrent_runs):
                for name in pair_order(r):
                    rates[name].append(await _throughput(runs[name], tasks, per_task))
            inline = inline_share(stm, since=jobs)
            batches = stm_batches(stm) - batches
    finally:
        await writer.close()
        await best.close()
    rate = {k: statistics.median(v[0] for v in vs) for k, vs in rates.items()}
    cpu = {k: statistics.median(v[1] for v in vs) for k, vs in rates.items()}
    collections = {k: statistics.median(v[2] for v in vs) for k, vs in rates.items()}
    collecting = {k: statistics.median(v[3] for v in vs) for k, vs in rates.items()}
    turns = paired_ratios(rates["stm_turns"], rates["floor_turns"])
    turns_cpu = paired_ratios(rates["floor_turns"], rates["stm_turns"], index=1)
    write_ratios = paired_ratios(rates["stm_writes"], rates["floor_writes"])
    best_turns = paired_ratios(rates["stm_turns"], rates["best_floor_turns"])
    best_writes = paired_ratios(rates["stm_writes"], rates["best_floor_writes"])
    best_cpu = paired_ratios(rates["best_floor_turns"], rates["stm_turns"], index=1)
    return {
        "concurrent_throughput_ratio": round(statistics.median(turns), 3),
        "concurrent_write_throughput_ratio": round(statistics.median(write_ratios), 3),
        # Throughput in CPU terms: the floor's CPU per turn over stm's (above 1: stm leaner).
        "concurrent_cpu_ratio": round(statistics.median(turns_cpu), 3),
        # The same against the floor that batches best (one transaction per loop pass).
        "concurrent_throughput_ratio_best": round(statistics.median(best_turns), 3),
        "concurrent_write_throughput_ratio_best": round(statistics.median(best_writes), 3),
        "concurrent_cpu_ratio_best": round(statistics.median(best_cpu), 3),
        "concurrent": {"tasks": tasks, "turns_per_task": per_task, "runs": cfg.concurrent_runs,
                       "turns_per_s": {k: round(v, 1) for k, v in rate.items()},
                       "cpu_us_per_turn": {k: round(v, 1) for k, v in cpu.items()},
                       "gc_passes_per_1000_turns": {k: round(v, 1)
                                                    for k, v in collections.items()},
                       "gc_us_per_turn": {k: round(v, 1) for k, v in collecting.items()},
                       # Each run's stm ÷ floor, measured back to back: the spread.
                       "turn_ratios": [round(x, 3) for x in turns],
                       "write_ratios": [round(x, 3) for x in write_ratios],
                       "best_turn_ratios": [round(x, 3) for x in best_turns],
                       "floor_batches": writer.batches,
                       "best_floor_batches": best.batches,
                       "stm_batches": batches,
                       # stm's writes of these runs that ran inline: a few, at most.
                       "writes_inline_share": inline},
    }


def stm_batches(stm: Stm) -> int:
    """Transactions stm's SQLite writer thread committed so far (0 off SQLite)."""
    writer = getattr(stm.adapter, "writer", None)
    return 0 if writer is None else int(writer.stats.batches)


#: The comparisons of a concurrency run: stm beside each of its two floors
#: (the group-commit writer, and the one that batches best).
PAIRS = (("stm_turns", "floor_turns", "best_floor_turns"),
         ("stm_writes", "floor_writes", "best_floor_writes"))


def pair_order(run: int) -> list[str]:
    """The order of run ``run``'s six measurements: stm between its two floors
    (which floor goes first alternates), and the groups swap places every
    other run, so neither side nor group always meets the machine in the
    same state."""
    groups = PAIRS if run % 4 < 2 else PAIRS[::-1]
    return [name for ours, floor, best in groups
            for name in ((floor, ours, best) if run % 2 == 0 else (best, ours, floor))]


def paired_ratios(numerators: Sequence[Sequence[float]], denominators: Sequence[Sequence[float]],
                  *, index: int = 0) -> list[float]:
    """Run by run, the ratio of two measurements taken back to back (``index``
    0: turns per second, 1: CPU per turn). A slow patch of the machine hits
    both sides of a run, so their ratio moves less than either side does."""
    return [n[index] / d[index] for n, d in zip(numerators, denominators, strict=True)]
