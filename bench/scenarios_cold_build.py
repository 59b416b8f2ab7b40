"""``cold_first_build_*``: the first build after a restart, big server ÷ small.

A restarted bot opens a fresh store, and its first turn in a server reads
that server's rows from the database. Two servers are seeded, one of
``server_channels[0]`` rows and one of ``server_channels[1]``, every row at
its own time within the load window. Each sample opens a fresh store
(untimed), builds once in a server without rows (the store's very first
call: a new connection's costs, the same whatever the server; reported
apart), times one ``build_context`` in a channel of one server (wall and
process CPU time), and closes the store; the two servers alternate, so a
slow patch of the machine hits both. The key is the big server's median
over the small one's (target ≤ 3); the big server's median itself is held
to ≤ 20 ms. On SQLite and, when configured, PostgreSQL (the same rows).

Also measured:

* peak RSS growth of that first build, in a child process of its own:
  ``ru_maxrss`` after the build minus before it, once a build in another
  server has loaded every module (target ≤ 16 MB); and, in a second child,
  the peak of Python's own allocations during the build (``tracemalloc``);
* a restart with many active servers (SQLite): ``wake_servers`` servers get
  their first turn at once on one fresh store (one user each, all gathered).
  Reported: p50 and p99 of those builds and the database statements per
  server, first with every server small, then with ``wake_big_servers`` of
  them replaced by big ones. Seeding a thousand big servers is out of reach
  here (50 million rows), so the big ones are a few: enough of them that the
  p99 is theirs if they cost more.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from bench import workload as w
from bench.config import RunConfig
from bench.harness import Stats, percentile
from bench.seeding import COLUMNS, TABLE, check_schema, seed_rows
from bench.stm_side import open_bench_store
from bench.urls import asyncpg_dsn, sqlite_url, stm_postgres_url
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.store import Stm

#: Seeded servers are numbered from here (away from other scenarios' ids).
SMALL, BIG = 5_000_000, 5_100_000
WAKE_SMALL, WAKE_BIG = 5_200_000, 5_300_000
#: A server without rows: a fresh store's very first build goes there.
EMPTY = 5_400_000
#: The users of the waking turns are numbered from here.
WAKE_USERS = 300_000_000_000_000_000
RSS_TARGET_KB = 16 * 1024


def _turn(server: str, channel: int, user: str = w.USER_ID) -> Turn:
    return attrs.evolve(w.build_turn(server, w.channel_id(channel), {}), user_id=user)


def count_statements(stm: Stm) -> list[int]:
    """Count the statements the store's adapter runs from here on (a
    one-item list, bumped in place): every step of every read and write."""
    counter = [0]
    adapter: Any = stm.adapter
    for name in ("_run_read", "_run_write"):
        def counted(method: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
            async def call(steps: Any) -> Any:
                counter[0] += len(steps)
                return await method(steps)
            return call
        setattr(adapter, name, counted(getattr(adapter, name)))
    return counter


async def _first_build(url: str, turn: Turn) -> tuple[int, int, int]:
    """Wall and CPU nanoseconds of the first build in ``turn``'s server on a
    freshly opened store, and the wall time of the store's very first build
    (in a server without rows, just before: what a fresh connection costs
    whatever the server)."""
    async with open_bench_store(url, ManualClock(w.EPOCH_MS)) as stm:
        gc.collect()
        first = time.perf_counter_ns()
        await stm.build_context(_turn(w.server_id(EMPTY), 0))
        first = time.perf_counter_ns() - first
        wall, cpu = time.perf_counter_ns(), time.process_time_ns()
        await stm.build_context(turn)
        return time.perf_counter_ns() - wall, time.process_time_ns() - cpu, first


async def first_builds(url: str, servers: dict[str, str], samples: int
                       ) -> tuple[dict[str, Stats], float]:
    """``samples`` first builds per server (name -> id), alternating, each
    in another channel, each on a fresh store; and the median of the
    stores' very first builds (ms)."""
    await _first_build(url, _turn(next(iter(servers.values())), 0))  # imports, compiles
    wall: dict[str, list[int]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    firsts: list[int] = []
    for i in range(samples):
        names = list(servers) if i % 2 == 0 else list(reversed(servers))
        for name in names:
            took, used, first = await _first_build(url, _turn(servers[name], 1 + i % 50))
            wall[name].append(took)
            cpu[name].append(used)
            firsts.append(first)
    return ({name: Stats.of(wall[name], (), cpu[name]) for name in servers},
            round(statistics.median(firsts) / 1e6, 3))


def _seed_sqlite(path: Path, cfg: RunConfig) -> dict[str, str]:
    small, big = cfg.server_channels
    seed_rows(path, 0, small, updated_at_ms=w.EPOCH_MS - 1, server_base=SMALL,
              per_server=small, scattered=False)
    seed_rows(path, 0, big, updated_at_ms=w.EPOCH_MS - 1, server_base=BIG,
              per_server=big, scattered=False)
    return {"small": w.server_id(SMALL), "big": w.server_id(BIG)}


async def _schema(url: str) -> None:
    async with open_bench_store(url, ManualClock(w.EPOCH_MS)):
        pass


def _rss_child(url: str, server: str, warm_server: str, mode: str) -> dict[str, int]:
    """Run :func:`_measure_rss` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-m", "bench.scenarios_cold_build", mode, url,
                          server, warm_server], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent)
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def _measure_rss(url: str, server: str, warm_server: str, mode: str) -> dict[str, int]:
    clock = ManualClock(w.EPOCH_MS)
    async with open_bench_store(url, clock) as stm:  # every module loaded, as after a turn
        await stm.build_context(_turn(warm_server, 0))
    async with open_bench_store(url, clock) as stm:
        await stm.build_context(_turn(w.server_id(EMPTY), 0))  # the store's first call
        gc.collect()
        if mode == "tracemalloc":
            tracemalloc.start()
            await stm.build_context(_turn(server, 1))
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            return {"tracemalloc_peak_kb": peak // 1024}
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await stm.build_context(_turn(server, 1))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"maxrss_growth_kb": after - before}


def _rss(url: str, servers: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, server in servers.items():
        other = next(s for n, s in servers.items() if n != name)
        out[name] = {**_rss_child(url, server, other, "rss"),
                     **_rss_child(url, server, other, "tracemalloc")}
    return out


def _summary(stats: dict[str, Stats]) -> dict[str, Any]:
    big, small = stats["big"], stats["small"]
    return {"ratio": round(big.median_us / small.median_us, 3),
            "cpu_ratio": (round(big.cpu_us / small.cpu_us, 3) if big.cpu_us and small.cpu_us
                          else None),
            "big_median_ms": round(big.median_us / 1000, 3),
            "small_median_ms": round(small.median_us / 1000, 3)}


async def _wake(url: str, servers: list[str]) -> dict[str, Any]:
    """Every server's first turn at once on one fresh store."""
    async with open_bench_store(url, ManualClock(w.EPOCH_MS)) as stm:
        await stm.build_context(_turn(w.server_id(SMALL), 0))  # imports, compiles
        stm.engine.flush()
        statements = count_statements(stm)
        gc.collect()

        async def one(n: int, server: str) -> int:
            begin = time.perf_counter_ns()
            await stm.build_context(_turn(server, 1 + n % 50, str(WAKE_USERS + n)))
            return time.perf_counter_ns() - begin

        wall, cpu = time.perf_counter(), time.process_time()
        took = await asyncio.gather(*(one(n, s) for n, s in enumerate(servers)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ms = sorted(t / 1e6 for t in took)
    return {"servers": len(servers), "p50_ms": round(statistics.median(ms), 2),
            "p99_ms": round(percentile(ms, 99), 2), "max_ms": round(ms[-1], 2),
            "all_done_ms": round(wall * 1000, 1), "cpu_ms": round(cpu * 1000, 1),
            "statements": statements[0],
            "statements_per_server": round(statements[0] / len(servers), 2)}


async def _wake_scenario(cfg: RunConfig) -> dict[str, Any]:
    small, big = cfg.server_channels
    path = cfg.workdir / "cold_wake.db"
    url = sqlite_url(path)
    await _schema(url)
    seed_rows(path, 0, cfg.wake_servers * small, updated_at_ms=w.EPOCH_MS - 1,
              server_base=WAKE_SMALL, per_server=small, scattered=False)
    seed_rows(path, 0, cfg.wake_big_servers * big, updated_at_ms=w.EPOCH_MS - 1,
              server_base=WAKE_BIG, per_server=big, scattered=False)
    smalls = [w.server_id(WAKE_SMALL + n) for n in range(cfg.wake_servers)]
    bigs = [w.server_id(WAKE_BIG + n) for n in range(cfg.wake_big_servers)]
    mixed = smalls[:len(smalls) - len(bigs)] + bigs
    all_small = await _wake(url, smalls)
    some_big = await _wake(url, mixed)
    return {"rows": [small, big], "all_small": all_small, "some_big": some_big,
            "big_servers": len(bigs),
            "p99_ratio": round(some_big["p99_ms"] / all_small["p99_ms"], 3),
            "cpu_ratio": round(some_big["cpu_ms"] / all_small["cpu_ms"], 3),
            "statements_ratio": round(some_big["statements"] / all_small["statements"], 3)}


def _sqlite_rows(path: Path) -> Iterator[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        yield from conn.execute(f"SELECT {', '.join(COLUMNS)} FROM {TABLE}")


async def _postgres(cfg: RunConfig, sqlite_path: Path, servers: dict[str, str]
                    ) -> dict[str, Any]:
    import asyncpg

    assert cfg.postgres_url is not None
    schema = f"stm_bench_cold_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(asyncpg_dsn(cfg.postgres_url))
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        url = stm_postgres_url(cfg.postgres_url, schema)
        await _schema(url)
        await admin.copy_records_to_table(TABLE, schema_name=schema, columns=list(COLUMNS),
                                          records=list(_sqlite_rows(sqlite_path)))
        await admin.execute(f'ANALYZE "{schema}".{TABLE}')
        stats, first = await first_builds(url, servers, cfg.cold_samples)
        return {"stats": stats, "store_first_build_ms": first, "rss": _rss(url, servers)}
    finally:
        await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.close()


def _keys(backend: str, summary: dict[str, Any], rss: dict[str, Any]) -> dict[str, Any]:
    return {f"cold_first_build_{backend}": summary["ratio"],
            f"cold_first_build_{backend}_cpu_ratio": summary["cpu_ratio"],
            f"cold_first_build_{backend}_ms": summary["big_median_ms"],
            f"cold_first_build_{backend}_rss_kb": rss["big"]["maxrss_growth_kb"]}


async def run(cfg: RunConfig) -> dict[str, Any]:
    path = cfg.workdir / "cold_build.db"
    await _schema(sqlite_url(path))
    check_schema(path)
    servers = _seed_sqlite(path, cfg)
    stats, first = await first_builds(sqlite_url(path), servers, cfg.cold_samples)
    details: dict[str, Any] = {"rows": list(cfg.server_channels), "samples": cfg.cold_samples}
    sqlite = _summary(stats)
    rss = _rss(sqlite_url(path), servers)
    details["sqlite"] = {**sqlite, "store_first_build_ms": first, "rss": rss}
    out: dict[str, Any] = _keys("sqlite", sqlite, rss)
    scenarios = {f"cold_first_build_sqlite_{n}": s.to_json() for n, s in stats.items()}
    if cfg.postgres_url:
        pg = await _postgres(cfg, path, servers)
        pg_summary = _summary(pg["stats"])
        details["postgres"] = {**pg_summary, "store_first_build_ms": pg["store_first_build_ms"],
                               "rss": pg["rss"]}
        out.update(_keys("postgres", pg_summary, pg["rss"]))
        scenarios.update({f"cold_first_build_postgres_{n}": s.to_json()
                          for n, s in pg["stats"].items()})
    else:
        out["cold_first_build_postgres_skipped"] = "no PostgreSQL URL configured"
    details["wake"] = await _wake_scenario(cfg)
    out["cold_wake_p99_ratio"] = details["wake"]["p99_ratio"]
    out["cold_wake_cpu_ratio"] = details["wake"]["cpu_ratio"]
    out["cold_first_build"] = details
    out["scenarios"] = scenarios
    return out


if __name__ == "__main__":  # a child measuring one build's memory (see _rss_child)
    url, server, warm_server = sys.argv[2:5]
    print(json.dumps(asyncio.run(_measure_rss(url, server, warm_server, sys.argv[1]))))
