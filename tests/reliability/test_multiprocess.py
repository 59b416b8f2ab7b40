"""Several processes on one PostgreSQL database see each other's writes.

Real processes (``tests.reliability.shard``) share one schema. One writes a
new summary in a channel again and again; the others keep building the
context of a turn in another channel of the same server, answered from their
caches, and report when each new version shows up. The delay from just
before the write started to the first build that shows it is the staleness;
its percentiles are the figures of docs/reliability.md. Mid-run the
listening connection of every reader is killed on the server
(``pg_terminate_backend``): it reconnects by itself, drops its cache, and the
versions written meanwhile still show up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from tests.conftest import asyncpg_dsn, postgres_base_url

from .procs import Shard, shards
from .support import add_figure, percentile, scaled

SERVER = "guild"
WRITTEN = "news"
READ_FROM = "lobby"
#: What the docs promise while the listener is connected: far above the
#: measured p99, well under a listener check interval.
STALENESS_BOUND_S = 1.0


async def kill_listeners(readers: list[Shard]) -> list[int]:
    pids = []
    for reader in readers:
        answer = await reader.call("listener", "listener")
        pids.append(answer["pid"])
    base = postgres_base_url()
    assert base is not None
    conn = await asyncpg.connect(asyncpg_dsn(base))
    try:
        for pid in pids:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await conn.close()
    return pids


async def write_versions(writer: Shard, first: int, last: int, gap_s: float) -> dict[int, float]:
    started = {}
    for i in range(first, last + 1):
        answer = await writer.call("write", "wrote", server=SERVER, channel=WRITTEN,
                                   text=f"version <v{i}>")
        started[i] = answer["t0"]
        await asyncio.sleep(gap_s)
    return started


async def collect(reader: Shard, last: int) -> dict[int, float]:
    seen: dict[int, float] = {}
    while True:
        event = await reader.watch_events.get()
        if event["event"] == "seen":
            seen[event["marker"]] = event["t"]
        elif event["event"] in ("watch_done", "exit"):
            assert event.get("marker") == last, f"reader stopped at {event} before v{last}"
            return seen


@pytest.mark.postgres
async def test_writes_reach_other_processes_and_survive_a_listener_kill(
        pg_url: str, figures: dict[str, Any]) -> None:
    versions = scaled(ci=120, full=1000)
    kill_at = versions // 2
    async with shards(pg_url, 3) as (writer, *readers):
        for reader in readers:
            await reader.call("warm", "warm", server=SERVER, channel=READ_FROM)
            reader.send(op="watch", server=SERVER, channel=READ_FROM, last=versions - 1)
        watching = [asyncio.create_task(collect(r, versions - 1)) for r in readers]

        started = await write_versions(writer, 0, kill_at - 1, gap_s=0.01)
        await kill_listeners(readers)
        started |= await write_versions(writer, kill_at, versions - 1, gap_s=0.01)
        seen_by = await asyncio.gather(*watching)

        stats = [(await r.call("listener", "listener"))["stats"] for r in readers]

    delays = []
    for seen in seen_by:
        # The last version always shows, whatever happened to the listener.
        assert versions - 1 in seen
        for i, t in seen.items():
            delays.append(t - started[i])
    for s in stats:
        assert s["connects"] >= 2 and s["connection_losses"] >= 1
    assert min(delays) >= 0
    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    assert p99 < STALENESS_BOUND_S, f"p99 staleness {p99:.3f} s"
    add_figure(figures, "staleness_samples", len(delays))
    add_figure(figures, "staleness_p50_ms", round(p50 * 1000, 2))
    add_figure(figures, "staleness_p99_ms", round(p99 * 1000, 2))
    add_figure(figures, "staleness_max_ms", round(max(delays) * 1000, 2))
    add_figure(figures, "listener_kills_survived", len(readers))
