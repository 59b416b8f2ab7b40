"""stm against what a host would use instead, per turn and per byte.

stm's turn is what a host does each turn: ``record_turn`` then a warm
``build_context``. The peers do their equivalent (save the conversation
state, read it back). Ratios are peer time / stm time: above 1, stm is faster.
Beside them runs the floor of stm's turn on the same workload
(:class:`~bench.floor_turn.FloorTurn`: stm's SQL on the caller's thread, as
stm writes a lone turn, the hand-written build, the same texts): each peer's
time over the floor's is the
most stm could score against that peer without doing less work per turn.
Database growth is measured after every channel has been written once, with
the WAL checkpointed before each size reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

from bench import workload as w
from bench.config import RunConfig
from bench.floor_turn import FloorTurn
from bench.floors import FloorResult
from bench.floors_thread import InlineWriter, RawAsyncpg
from bench.harness import cpu_ratio, interleave, prepared_set_aside, ratio
from bench.peers import LangGraphPostgresSaver, LangGraphSaver, OpenAISession, PeerUnavailable
from bench.scenarios_build import as_floor_result, first_difference
from bench.scenarios_record import (
    Workload,
    floor_host_turn,
    raw_record,
    stm_host_turn,
    stm_record,
    thread_writer,
)
from bench.stm_side import compiled_capture, inline_share, open_bench_store, writer_jobs
from bench.urls import asyncpg_dsn, sqlite_url, stm_postgres_url
from stm_core._util.clock import ManualClock
from stm_core.models import StmContext
from stm_core.store import Stm

log = logging.getLogger("stm.bench")


#: Attempts at a truncating checkpoint before a size is read anyway.
CHECKPOINT_ATTEMPTS = 100


async def db_bytes(path: Path) -> int:
    """The database file plus its WAL, after a checkpoint that emptied the WAL.

    A checkpoint another connection runs at that moment (stm's own, on its
    reader thread, started by the last turns) makes ours return busy at once
    and leaves the WAL at its full size: it is tried again until it succeeds.
    """
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for _ in range(CHECKPOINT_ATTEMPTS):
            busy, _frames, _copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                break
            await asyncio.sleep(0.01)
        else:
            log.warning("%s: the WAL could not be emptied; its size is counted", path.name)
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


async def growth(turn: Callable[[int], Awaitable[object]], path: Path, start: int,
                 turns: int) -> float:
    before = await db_bytes(path)
    for i in range(start, start + turns):
        await turn(i)
    return (await db_bytes(path) - before) / turns


async def _same_texts(stm_turn: Callable[[int], Awaitable[StmContext]],
                      floor_turn: Callable[[int], Awaitable[FloorResult]],
                      channels: int) -> bool:
    """Every channel written once on both sides, then one turn's texts compared:
    the floor does stm's work or its times mean nothing."""
    for i in range(channels):
        await stm_turn(i)
        await floor_turn(i)
    got, want = as_floor_result(await stm_turn(channels)), await floor_turn(channels)
    if got != want:
        log.warning("peers: the floor's texts differ from stm's: %s",
                    first_difference(got, want))
    return got == want


async def run(cfg: RunConfig) -> dict[str, Any]:
    load = Workload(channels=cfg.channels)
    timed = max(cfg.warmup, cfg.channels) + cfg.rounds * cfg.turns
    # The texts check, both placements, then the growth.
    load.prepare(cfg.channels + 1 + 2 * timed + cfg.growth_turns)
    with prepared_set_aside():
        return await _run(cfg, load)


async def _run(cfg: RunConfig, load: Workload) -> dict[str, Any]:
    clock = ManualClock(w.EPOCH_MS)
    stm_path = cfg.workdir / "stm_peers.db"
    peers: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for key, peer in (("langgraph", LangGraphSaver(str(cfg.workdir / "langgraph.db"),
                                                      cfg.channels)),
                      ("openai", OpenAISession(str(cfg.workdir / "openai.db"), cfg.channels))):
        try:
            peers[key] = await peer.open()
        except PeerUnavailable as exc:
            unavailable[key] = str(exc)
            log.warning("peer %s unavailable: %s", key, exc)
    paths = {"langgraph": cfg.workdir / "langgraph.db", "openai": cfg.workdir / "openai.db"}
    # Beside each: the peer at its out-of-the-box durability (synchronous=FULL).
    for key, peer in (("langgraph_default", LangGraphSaver(
            str(cfg.workdir / "langgraph_default.db"), cfg.channels, synchronous=None)),
                      ("openai_default", OpenAISession(
            str(cfg.workdir / "openai_default.db"), cfg.channels, synchronous=None))):
        if key.split("_")[0] in peers:
            peers[key] = await peer.open()
    # stm writes a lone turn on the caller's thread: so does its floor.
    writer = await thread_writer(cfg.workdir / "peers_floor.db", clock, kind=InlineWriter)
    try:
        async with open_bench_store(sqlite_url(stm_path), clock) as stm:
            stm_turn = stm_host_turn(stm, clock, load)
            floor = FloorTurn(writer, load.server, load.names, render_mode="crude_summary",
                              now_ms=w.EPOCH_MS)
            floor_turn = floor_host_turn(floor, load)
            check = await _same_texts(stm_turn, floor_turn, cfg.channels)
            first = cfg.channels + 1
            scenarios: dict[str, Callable[[int], Awaitable[object]]] = {
                "stm_host_turn_sqlite": stm_turn, "floor_inline_host_turn": floor_turn}
            names = {"langgraph": "langgraph_saver_turn", "openai": "openai_session_turn",
                     "langgraph_default": "langgraph_saver_turn_sdk_default",
                     "openai_default": "openai_session_turn_sdk_default"}
            for key, peer in peers.items():
                scenarios[names[key]] = peer.turn
            # Every channel (thread, session) exists before anything is timed.
            warmup = max(cfg.warmup, cfg.channels)
            jobs = writer_jobs(stm)
            stats = await interleave(scenarios, rounds=cfg.rounds, turns=cfg.turns,
                                     warmup=warmup, placement="one_cpu", first=first)
            inline = inline_share(stm, since=jobs)
            after = first + warmup + cfg.rounds * cfg.turns
            # The same with every hop across CPUs (fresh turns: Turn memos start cold).
            across = await interleave(scenarios, rounds=cfg.rounds, turns=cfg.turns,
                                      warmup=warmup, placement="across_cpus", first=after)
            after += warmup + cfg.rounds * cfg.turns
            bytes_per_turn: dict[str, float | None] = {
                "stm": round(await growth(stm_turn, stm_path, after, cfg.growth_turns), 1)}
            for key, peer in peers.items():
                if key not in paths:
                    continue
                bytes_per_turn[key] = round(
                    await growth(peer.turn, paths[key], after, cfg.growth_turns), 1)
            for key in unavailable:
                bytes_per_turn[key] = None
    finally:
        await writer.close()
        for peer in peers.values():
            await peer.close()

    ours, floor_stats = stats["stm_host_turn_sqlite"], stats["floor_inline_host_turn"]
    result: dict[str, Any] = {
        "vs_langgraph_saver": (ratio(stats["langgraph_saver_turn"], ours)
                               if "langgraph" in peers else None),
        "vs_openai_session": (ratio(stats["openai_session_turn"], ours)
                              if "openai" in peers else None),
        "vs_langgraph_saver_cpu": (cpu_ratio(stats["langgraph_saver_turn"], ours)
                                   if "langgraph" in peers else None),
        "vs_openai_session_cpu": (cpu_ratio(stats["openai_session_turn"], ours)
                                  if "openai" in peers else None),
        # Each peer over the floor of stm's turn: the most stm could score.
        "vs_peers_floor": {key: ratio(stats[names[key]], floor_stats)
                           for key in ("langgraph", "openai") if key in peers},
        "vs_peers_floor_cpu": {key: cpu_ratio(stats[names[key]], floor_stats)
                               for key in ("langgraph", "openai") if key in peers},
        "peers_floor_texts_equal": check,
        "peers_writes_inline_share": inline,
        "vs_peers_across_cpus": {
            key: ratio(across[names[key]], across["stm_host_turn_sqlite"])
            for key in ("langgraph", "openai") if key in peers},
        "vs_peers_sdk_default": {
            key: ratio(stats[names[key]], ours) for key in ("langgraph_default",
                                                             "openai_default")
            if key in peers},
        "bytes_per_turn": bytes_per_turn["stm"],
        "bytes_per_turn_all": bytes_per_turn,
        "peers_unavailable": unavailable,
        "scenarios": {**{name: s.to_json() for name, s in stats.items()},
                      **{f"{name}_across_cpus": s.to_json() for name, s in across.items()}},
    }
    return result


# -- PostgreSQL ------------------------------------------------------------------------
PG_KEY = "vs_langgraph_postgres_saver"


async def postgres_run(cfg: RunConfig) -> dict[str, Any]:
    """stm's host turn against LangGraph's ``AsyncPostgresSaver``, both on the
    same PostgreSQL server, each in a schema of its own, interleaved; beside
    them the floor: stm's one write statement on a raw asyncpg connection."""
    if not cfg.postgres_url:
        return {PG_KEY: None, f"{PG_KEY}_skipped": "STM_TEST_POSTGRES_URL is not set"}
    import asyncpg

    dsn = asyncpg_dsn(cfg.postgres_url)
    try:
        admin = await asyncpg.connect(dsn)
    except (OSError, asyncpg.PostgresError) as exc:
        return {PG_KEY: None, f"{PG_KEY}_skipped": f"PostgreSQL unreachable: {exc}"}
    load = Workload(channels=cfg.channels)
    load.prepare(2 + max(cfg.warmup, cfg.channels) + cfg.pg_rounds * cfg.turns)
    tag = uuid.uuid4().hex[:10]
    schemas = PgSchemas(stm=f"stm_bench_peer_{tag}", peer=f"langgraph_bench_peer_{tag}",
                        floor=f"stm_bench_peer_floor_{tag}")
    try:
        for schema in schemas:
            await admin.execute(f'CREATE SCHEMA "{schema}"')
        with prepared_set_aside():
            return await _postgres_run(cfg, load, dsn, schemas)
    finally:
        for schema in schemas:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.close()


class PgSchemas(NamedTuple):
    stm: str
    peer: str
    floor: str


async def stm_setting(stm: Stm, name: str) -> str:
    """A setting of the session stm's statements run on, as the server reports it."""
    adapter: Any = stm.adapter
    async with adapter._acquire() as conn:
        return str(await conn.fetchval(f"SHOW {name}"))


async def postgres_floor(cfg: RunConfig, load: Workload, dsn: str, schema: str,
                         clock: ManualClock) -> RawAsyncpg:
    """stm's capture statement, as a store on ``schema`` compiled it, on a raw
    asyncpg connection: the host turn's one write, without stm around it."""
    assert cfg.postgres_url is not None
    async with open_bench_store(stm_postgres_url(cfg.postgres_url, schema), clock) as other:
        await stm_record(other, clock, load)(0)
        compiled = compiled_capture(other, 2)
    return await RawAsyncpg(dsn, schema, compiled.sql, compiled.slots or (),
                            dict(compiled.constants)).open()


async def _postgres_run(cfg: RunConfig, load: Workload, dsn: str,
                        schemas: PgSchemas) -> dict[str, Any]:
    assert cfg.postgres_url is not None
    clock = ManualClock(w.EPOCH_MS)
    floor = await postgres_floor(cfg, load, dsn, schemas.floor, clock)
    try:
        async with open_bench_store(stm_postgres_url(cfg.postgres_url, schemas.stm),
                                    clock) as stm:
            durability = await stm_setting(stm, "synchronous_commit")
            peer = LangGraphPostgresSaver(dsn, schemas.peer, cfg.channels,
                                          synchronous_commit=durability)
            try:
                await peer.open()
            except PeerUnavailable as exc:
                log.warning("peer langgraph (PostgreSQL) unavailable: %s", exc)
                return {PG_KEY: None, f"{PG_KEY}_skipped": str(exc)}
            try:
                peer_durability = await peer.setting("synchronous_commit")
                if peer_durability != durability:
                    raise RuntimeError(f"the saver commits with synchronous_commit="
                                       f"{peer_durability}, stm with {durability}")
                warmup = max(cfg.warmup, cfg.channels)  # every channel and thread exists
                stats = await interleave({
                    "stm_host_turn_postgres": stm_host_turn(stm, clock, load),
                    "langgraph_postgres_saver_turn": peer.turn,
                    "floor_asyncpg_host_write": raw_record(floor, load),
                }, rounds=cfg.pg_rounds, turns=cfg.turns, warmup=warmup, first=1)
            finally:
                await peer.close()
    finally:
        await floor.close()
    ours, theirs = stats["stm_host_turn_postgres"], stats["langgraph_postgres_saver_turn"]
    floor_stats = stats["floor_asyncpg_host_write"]
    return {
        PG_KEY: ratio(theirs, ours),
        f"{PG_KEY}_cpu": cpu_ratio(theirs, ours),
        # The peer over stm's write alone: the most stm could score against it.
        f"{PG_KEY}_floor": ratio(theirs, floor_stats),
        f"{PG_KEY}_floor_cpu": cpu_ratio(theirs, floor_stats),
        "postgres_peer_synchronous_commit": durability,
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
