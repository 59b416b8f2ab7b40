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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floor_turn import FloorTurn
from bench.floors import FloorResult
from bench.floors_thread import InlineWriter
from bench.harness import cpu_ratio, interleave, prepared_set_aside, ratio
from bench.peers import LangGraphSaver, OpenAISession, PeerUnavailable
from bench.scenarios_build import as_floor_result, first_difference
from bench.scenarios_record import WINDOWS, Workload, floor_host_turn, thread_writer
from bench.stm_side import inline_share, open_bench_store, writer_jobs
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import StmContext

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
            async def stm_turn(i: int) -> StmContext:
                clock.set(w.EPOCH_MS + i * 1000)
                turn = load.turn(i)
                await stm.record_turn(turn, load.histories[i % WINDOWS],
                                      load.replies[i % WINDOWS])
                return await stm.build_context(turn)

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
