"""``scale_ratio``: a turn's cost as the database grows from 1k to 1M rows.

One file is seeded size by size (rows spread over servers of 20 channels) and
copied at each size, so every size has its own database. All of them are then
opened together (a restart: caches empty) and measured interleaved, so noise
hits every size alike:

* cold: the first turn (``record_turn`` + ``build_context``) of a server after
  the restart, which loads its rows;
* warm: further turns on those servers;
* raw: the raw aiosqlite capture upserts on the same file (stm's own table),
  which tells SQLite's own growth apart from stm's.

The ratio is the warm median at the largest size over the smallest.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import workload as w
from bench.config import RunConfig
from bench.floors import RawSqlite
from bench.harness import Stats, interleave
from bench.scenarios_record import WINDOWS
from bench.seeding import (
    CHANNELS_PER_SERVER,
    TABLE,
    check_schema,
    count_rows,
    seed_rows,
    seeded_server,
)
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.store import Stm


def seed_sizes(cfg: RunConfig) -> tuple[dict[int, Path], dict[int, float]]:
    """One database per size, grown in one file and copied at each size."""
    growing = cfg.workdir / "scale_growing.db"
    seconds: dict[int, float] = {}
    files: dict[int, Path] = {}
    seeded = 0
    for size in cfg.scale_sizes:
        start = time.perf_counter()
        seed_rows(growing, seeded, size, updated_at_ms=w.EPOCH_MS - 10 * w.MINUTE_MS)
        seconds[size] = round(time.perf_counter() - start, 2)
        seeded = size
        files[size] = cfg.workdir / f"scale_{size}.db"
        shutil.copyfile(growing, files[size])
    growing.unlink()
    return files, seconds


async def run(cfg: RunConfig) -> dict[str, Any]:
    clock = ManualClock(w.EPOCH_MS)
    template = cfg.workdir / "scale_growing.db"
    async with open_bench_store(sqlite_url(template), clock):
        pass  # creates stm's schema, then rows are seeded into it directly
    check_schema(template)
    files, seed_seconds = seed_sizes(cfg)
    histories = [w.history(k) for k in range(WINDOWS)]
    replies = [w.responses(k) for k in range(WINDOWS)]
    names = {w.channel_id(c): f"chan-{c}" for c in range(CHANNELS_PER_SERVER)}
    rng = random.Random(7)
    smallest = min(cfg.scale_sizes)
    # Distinct servers for stm and for the raw writer, all present at every size.
    servers = smallest // CHANNELS_PER_SERVER
    picks = rng.sample(range(servers), min(servers, 2 * cfg.scale_cold_servers))
    stm_picks, raw_picks = picks[::2], picks[1::2]
    turns = {n: [w.build_turn(seeded_server(n), c, names) for c in names] for n in stm_picks}

    def pick_turn(i: int) -> Turn:
        return turns[stm_picks[i % len(stm_picks)]][(i // len(stm_picks)) % CHANNELS_PER_SERVER]

    def stm_turn(stm: Stm) -> Callable[[int], Awaitable[None]]:
        async def one(i: int) -> None:
            clock.set(w.EPOCH_MS + i)
            turn = pick_turn(i)
            await stm.record_turn(turn, histories[i % WINDOWS], replies[i % WINDOWS])
            await stm.build_context(turn)
        return one

    def raw_turn(raw: RawSqlite) -> Callable[[int], Awaitable[None]]:
        async def one(i: int) -> None:
            server = seeded_server(raw_picks[i % len(raw_picks)])
            channel = w.channel_id((i // len(raw_picks)) % CHANNELS_PER_SERVER)
            await raw.record(server, channel, w.USER_ID, histories[i % WINDOWS],
                             replies[i % WINDOWS], w.EPOCH_MS + i)
        return one

    async with contextlib.AsyncExitStack() as stack:
        stores: dict[int, Stm] = {}
        raws: dict[int, RawSqlite] = {}
        for size, path in files.items():
            stores[size] = await stack.enter_async_context(
                open_bench_store(sqlite_url(path), clock))
            raws[size] = await RawSqlite(str(path), table=TABLE).open()
            stack.push_async_callback(raws[size].close)
        cold: dict[int, list[int]] = {size: [] for size in files}
        sizes = list(stores)
        for k in range(len(stm_picks)):  # the first turn of each server, sizes rotated
            for size in sizes[k % len(sizes):] + sizes[:k % len(sizes)]:
                begin = time.perf_counter_ns()
                await stm_turn(stores[size])(k)
                cold[size].append(time.perf_counter_ns() - begin)
        scenarios: dict[str, Callable[[int], Awaitable[None]]] = {}
        for size in files:
            scenarios[f"scale_stm_turn_{size}"] = stm_turn(stores[size])
            scenarios[f"scale_raw_record_{size}"] = raw_turn(raws[size])
        stats = await interleave(scenarios, rounds=cfg.rounds, turns=cfg.scale_turns,
                                 warmup=len(stm_picks), placement="one_cpu")

    points: list[dict[str, Any]] = []
    for size, path in files.items():
        warm, raw = stats[f"scale_stm_turn_{size}"], stats[f"scale_raw_record_{size}"]
        points.append({"rows": size, "rows_in_db": count_rows(path),
                       "db_bytes": path.stat().st_size, "seed_seconds": seed_seconds[size],
                       "warm": warm.to_json(), "raw_record": raw.to_json(),
                       "cold_first_turn": Stats.of(cold[size]).to_json()})
    first, last = points[0], points[-1]

    def growth(kind: str) -> float:
        return round(float(last[kind]["median_us"]) / float(first[kind]["median_us"]), 3)

    return {
        "scale_ratio": growth("warm"),
        "scale_cold_ratio": growth("cold_first_turn"),
        "scale_raw_ratio": growth("raw_record"),
        "scale": {"channels_per_server": CHANNELS_PER_SERVER, "points": points,
                  "servers_measured": len(stm_picks),
                  "note": "warm = record_turn + build_context on a loaded server; cold = "
                          "the first such turn of a server after a restart; raw_record = "
                          "the two capture upserts on raw aiosqlite, same file and table"},
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
