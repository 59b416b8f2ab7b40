"""Run sizes: ``full`` (a few minutes), ``quick`` (under a minute) and ``tiny``
(seconds; the smoke test), plus where a run keeps its scratch databases."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

PG_ENV = "STM_TEST_POSTGRES_URL"


@attrs.frozen(kw_only=True)
class RunConfig:
    name: str
    #: Channels of the write-path guild: turn ``i`` talks in channel ``i % channels``.
    channels: int
    #: Interleaved rounds per comparison, and turns per scenario per round.
    rounds: int
    turns: int
    #: Context builds are microseconds: more samples per round.
    build_turns: int
    warmup: int
    pg_rounds: int
    #: Concurrency: tasks (one channel each) x turns per task.
    concurrent_tasks: int
    concurrent_turns: int
    concurrent_runs: int
    #: Turns measured for database growth, after one warm-up pass.
    growth_turns: int
    #: Memory rows in the database for the scale curve.
    scale_sizes: tuple[int, ...]
    scale_turns: int
    scale_cold_servers: int
    #: Stale rows the janitor purges while a writer keeps going.
    janitor_backlog: int
    janitor_writer_interval_ms: float
    #: The writer alone for this long first (its tail without the janitor).
    janitor_baseline_s: float
    #: Cache bound check: the bound, and how many servers are touched.
    cache_bound: int
    cache_touch: int
    #: Channels with a row in one server: the small and the large server.
    server_channels: tuple[int, int] = (500, 50_000)
    #: First builds after a restart, per server; servers woken at once, and
    #: how many of those are big.
    cold_samples: int = 30
    wake_servers: int = 1_000
    wake_big_servers: int = 20
    workdir: Path
    postgres_url: str | None = None

    @property
    def quick(self) -> bool:
        return self.name != "full"


def make_config(name: str, workdir: Path) -> RunConfig:
    pg = os.environ.get(PG_ENV) or None
    if name == "full":
        return RunConfig(name=name, channels=100, rounds=5, turns=1000, build_turns=5000,
                         warmup=100, pg_rounds=3, concurrent_tasks=100, concurrent_turns=50,
                         concurrent_runs=8, growth_turns=1000,
                         scale_sizes=(1_000, 10_000, 100_000, 1_000_000), scale_turns=300,
                         scale_cold_servers=30, janitor_backlog=200_000,
                         janitor_writer_interval_ms=2.0, janitor_baseline_s=3.0,
                         cache_bound=200, cache_touch=4000,
                         workdir=workdir, postgres_url=pg)
    if name == "quick":
        return RunConfig(name=name, channels=100, rounds=3, turns=200, build_turns=2000, warmup=30,
                         pg_rounds=2, concurrent_tasks=100, concurrent_turns=5,
                         concurrent_runs=4, growth_turns=300,
                         scale_sizes=(1_000, 10_000, 100_000), scale_turns=100,
                         scale_cold_servers=10, janitor_backlog=20_000,
                         janitor_writer_interval_ms=2.0, janitor_baseline_s=1.0,
                         cache_bound=100, cache_touch=1000, cold_samples=10,
                         wake_big_servers=10, workdir=workdir, postgres_url=pg)
    if name == "tiny":
        return RunConfig(name=name, channels=10, rounds=1, turns=10, build_turns=20, warmup=2,
                         pg_rounds=1, concurrent_tasks=10, concurrent_turns=2,
                         concurrent_runs=1, growth_turns=20, scale_sizes=(200, 1_000),
                         scale_turns=5, scale_cold_servers=2, janitor_backlog=500,
                         janitor_writer_interval_ms=2.0, janitor_baseline_s=0.2,
                         cache_bound=10, cache_touch=40, server_channels=(50, 2_000),
                         cold_samples=3, wake_servers=20, wake_big_servers=2,
                         workdir=workdir, postgres_url=pg)
    raise ValueError(f"unknown run size {name!r}; use full, quick or tiny")
