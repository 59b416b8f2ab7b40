"""The database going away under load and coming back (a restart or failover).

Four real processes (:mod:`.restart_worker`) reach PostgreSQL only through a
TCP proxy the test controls (:mod:`.pgproxy`), statements and listener alike.
Each records turns on a row they all share, applies tool calls, makes admin
edits and builds contexts; one also writes a new probe version every 50 ms
and the other three note when each version shows in their contexts. Mid-run
the database goes away twice, each time for ``OUTAGE_S``:

* ``network``: the proxy resets every connection and refuses new ones (a
  failover, a network partition);
* ``restart``: the server ends every session that came through the proxy
  (``pg_terminate_backend``: the same ``FATAL 57P01`` a shutting-down
  PostgreSQL sends) and the proxy refuses new connections until it is "up"
  again.

The test restarts nothing after either. What must hold:

* no acknowledged write is lost: every tool call and admin edit a process
  got an OK for is stored, the shared row's counter counts each acknowledged
  turn exactly once (and no more turns than were tried), the last
  acknowledged probe version or a later one is stored;
* during an outage callers see only ``StorageError`` (``record_turn``, admin
  calls) or the logged fallback whose cause is a ``StorageError``
  (``build_context``, ``apply_tool_call``), never a driver's own error; and
  no call fails outside an outage and the ``RECOVERY_BOUND_S`` after it;
* every process recovers by itself within ``RECOVERY_BOUND_S`` of the
  database's return: each kind of write succeeds again and the listener is
  connected again;
* staleness (a probe version's write start to the first context showing it
  in another process) of every version written after the return is within
  the not-listening bound (``listener_check_seconds``) plus a reload, and
  back under ``STALENESS_BOUND_S`` for every version written
  ``STALENESS_RECOVERY_S`` after the return;
* afterwards every process's cache equals the database.

The figures (recovery times, staleness after the return, failed calls and
their types) are those of docs/deployment.md.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import asyncpg
import attrs
import pytest

from stm_core.settings import Settings
from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import open_store
from tests.conftest import asyncpg_dsn, postgres_base_url

from .pgproxy import PgProxy
from .procs import Shard, shards
from .restart_worker import (
    LOAD_SERVER,
    PROBE_SERVER,
    PROBE_WRITTEN,
    SHARED_CHANNEL,
    SHARED_PERSONA,
    own_server,
)
from .support import add_figure, full_scale, percentile

pytestmark = pytest.mark.postgres

PROCESSES = 4
OUTAGES = ("network", "restart")
#: Load before the first outage, each outage, and the run after each return.
WARM_S = 8.0 if full_scale() else 2.0
OUTAGE_S = 15.0 if full_scale() else 3.0
AFTER_S = 20.0 if full_scale() else 8.0
DB_TIMEOUT_S = 2.0
LISTENER_CHECK_S = 1.0
#: Staleness while listening (as in test_multiprocess.py and the docs).
STALENESS_BOUND_S = 1.0
#: Longest pause between two listener reconnection attempts
#: (stm_core.engine.invalidation.MAX_RETRY_PAUSE_S) plus one connection and its
#: delivery self-check, each bounded by the statement timeout.
RECOVERY_BOUND_S = 5.0 + 2 * DB_TIMEOUT_S
#: Until the listener is back, views are reloaded at least every
#: listener_check_seconds; this long after the return, staleness must be
#: under STALENESS_BOUND_S again.
STALENESS_RECOVERY_S = 5.0
STORAGE_ERROR = "stm_core.errors.StorageError"


@attrs.frozen
class Window:
    kind: str
    cut: float
    back: float
    #: The next outage's start, or the end of the run.
    until: float = float("inf")
    #: Probe versions written from then on are left out of staleness: one
    #: written just before the next outage cuts it off may show only after
    #: that outage, and its delay would be the next outage's, not this one's.
    shown_by: float = float("inf")


#: How long a session may take to end once told to.
SESSION_END_WAIT_MS = 10_000


async def end_sessions(proxy: PgProxy) -> int:
    """What a restarting server does to its sessions: end each with FATAL 57P01,
    and be done with them before it comes back. Without a timeout
    ``pg_terminate_backend`` only signals the backend; on a busy machine a
    session could still answer when the proxy let connections in again, and
    no call saw the outage. Counts the sessions that ended."""
    base = postgres_base_url()
    assert base is not None
    conn = await asyncpg.connect(asyncpg_dsn(base))
    try:
        ended = await conn.fetchval(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, $2)) "
            "FROM pg_stat_activity "
            "WHERE client_addr = '127.0.0.1' AND client_port = ANY($1::int[])",
            sorted(proxy.upstream_ports()), SESSION_END_WAIT_MS)
        return int(ended)
    finally:
        await conn.close()


async def outage(proxy: PgProxy, kind: str) -> Window:
    cut = time.time()
    if kind == "network":
        proxy.cut()
    else:
        proxy.refuse()
        # Every process's listener at least.
        assert await end_sessions(proxy) >= PROCESSES
    await asyncio.sleep(OUTAGE_S)
    back = time.time()
    proxy.restore()
    return Window(kind, cut, back)


async def run(proxy: PgProxy, procs: list[Shard]) -> tuple[list[Window], list[dict[str, Any]]]:
    for n, proc in enumerate(procs):
        await proc.call("start", "started", index=n, probe="write" if n == 0 else "watch")
    await asyncio.sleep(WARM_S)
    windows = []
    for kind in OUTAGES:
        windows.append(await outage(proxy, kind))
        await asyncio.sleep(AFTER_S)
    # The probe writer stops first, so the watchers can see its last version.
    writer_report = await procs[0].call("stop", "report")
    end = time.time()
    await asyncio.sleep(2 * STALENESS_BOUND_S)
    others = await asyncio.gather(*(p.call("stop", "report") for p in procs[1:]))
    reports = [writer_report, *others]
    ends = [w.cut for w in windows[1:]] + [end]
    # The last window's watchers get 2 * STALENESS_BOUND_S after the end.
    shown_by = [w.cut - STALENESS_BOUND_S for w in windows[1:]] + [end]
    return [attrs.evolve(w, until=t, shown_by=by)
            for w, t, by in zip(windows, ends, shown_by, strict=True)], reports


def first_in(times: list[float], window: Window) -> float | None:
    later = [x for x in times if window.back <= x < window.until]
    return min(later) if later else None


def recovery(report: dict[str, Any], window: Window) -> dict[str, float]:
    """Seconds from the database's return to the first success of each write
    kind and to the listener being connected again."""
    found: dict[str, float] = {}
    for kind, acks in report["acked"].items():
        if kind == "probe":  # timed from its start, for staleness
            continue
        t = first_in([at for _id, at in acks], window)
        assert t is not None, f"{window.kind}: no {kind} write succeeded after the return"
        found[kind] = t - window.back
    t = first_in([t for t, up in report["listener_changes"] if up], window)
    assert t is not None, f"{window.kind}: the listener did not reconnect after the return"
    found["listener"] = t - window.back
    return found


def staleness_after(written: list[list[Any]], seen: dict[str, float],
                    window: Window) -> list[tuple[float, float]]:
    """(write start, staleness) of every probe version written after the return."""
    shown = sorted((int(k), t) for k, t in seen.items())
    out = []
    for version, t0 in written:
        if not window.back <= t0 < window.shown_by:
            continue
        times = [t for k, t in shown if k >= version]
        assert times, f"v{version} ({t0 - window.back:.2f} s after the return) never showed"
        out.append((t0, min(times) - t0))
    return out


def back_under_bound(samples: list[tuple[float, float]], window: Window) -> float:
    """Seconds after the return from which every sample is under the bound."""
    late = [t0 for t0, delay in samples if delay >= STALENESS_BOUND_S]
    return max(late) - window.back if late else 0.0


async def check_nothing_lost(pg_url: str, reports: list[dict[str, Any]]) -> int:
    """Every acknowledged write is stored; returns how many there were."""
    settings = attrs.evolve(Settings(), cross_process_invalidation=False)
    async with open_store(pg_url, settings=settings, load_entrypoints=False) as direct:
        adapter = direct.adapter
        shared = await adapter.get_memory(MemoryKey.server(LOAD_SERVER, SHARED_CHANNEL,
                                                           SHARED_PERSONA))
        counters = [c for r in reports for c, _t in r["acked"]["turn"]]
        tried = len(counters) + sum(f["op"] == "record_turn" for r in reports
                                    for f in r["failures"])
        assert shared is not None
        stored = shared.turns_since_refresh
        assert len(set(counters)) == len(counters), "two acknowledged turns got one counter"
        # A failed turn may have committed (its reply was lost), and one per
        # process may be cut off by the stop.
        assert len(counters) <= stored <= tried + PROCESSES, (len(counters), stored, tried)
        assert max(counters) <= stored
        for n, report in enumerate(reports):
            rows = {row.key: row.summary for row in await adapter.list_memories(
                MemoryFilter(server_id=own_server(n), scope_kind="server"))}
            for i, _t in report["acked"]["tool"]:
                key = MemoryKey.server(own_server(n), "tools", f"t-{i}")
                assert rows.get(key) == f"tool p{n}-{i}", f"acknowledged tool call {key} lost"
            for i, _t in report["acked"]["admin"]:
                key = MemoryKey.server(own_server(n), "admin", f"a-{i}")
                assert rows.get(key) == f"admin p{n}-{i}", f"acknowledged admin edit {key} lost"
        probe = await adapter.get_memory(MemoryKey.server(PROBE_SERVER, PROBE_WRITTEN, None))
        last_acked = reports[0]["acked"]["probe"][-1][0]
        assert probe is not None and probe.summary is not None
        assert int(probe.summary.split("<v")[1].rstrip(">")) >= last_acked
        acked = sum(len(r["acked"][k]) for r in reports for k in ("tool", "admin", "probe"))
        return acked + len(counters)


def check_failures(reports: list[dict[str, Any]], windows: list[Window]) -> Counter[str]:
    """Only StorageError, only in an outage and its recovery bound; their types."""
    failures = [f for r in reports for f in r["failures"]]
    types = Counter(t for f in failures for t in f["types"])
    foreign = [detail for r in reports for detail in r["foreign"]]
    assert set(types) <= {STORAGE_ERROR}, f"callers saw {dict(types)}: {foreign[:3]}"
    stray = [f for f in failures
             if not any(w.cut <= f["t"] <= w.back + RECOVERY_BOUND_S for w in windows)]
    assert stray == [], stray
    for w in windows:
        # Noticed: some call that was under way during the outage failed (it
        # may fail after the return, when it was waiting on a dead connection).
        assert any(f["t0"] <= w.back and f["t"] >= w.cut for f in failures), \
            f"{w.kind} went unnoticed"
    return types


#: How long the caches may take to agree with the database once the writers
#: stopped: the last writes' notices may still be on their way.
CONVERGE_S = 5.0


async def coherent(procs: list[Shard]) -> list[list[str]]:
    """Each process's cache problems, asked again until none is left or
    CONVERGE_S has passed (the answer then is the last one)."""
    deadline = time.monotonic() + CONVERGE_S
    while True:
        problems = [(await p.call("coherent", "coherent"))["problems"] for p in procs]
        if not any(problems) or time.monotonic() >= deadline:
            return problems
        await asyncio.sleep(0.25)


async def test_processes_recover_by_themselves_when_the_database_comes_back(
        pg_url: str, figures: dict[str, Any]) -> None:
    proxy, proxied = await PgProxy.start_for(pg_url)
    env = {"STM_DB_TIMEOUT_SECONDS": str(DB_TIMEOUT_S),
           "STM_LISTENER_CHECK_SECONDS": str(LISTENER_CHECK_S)}
    try:
        async with shards(proxied, PROCESSES, env, module="restart_worker") as procs:
            windows, reports = await run(proxy, procs)
            problems = await coherent(procs)
    finally:
        await proxy.close()

    types = check_failures(reports, windows)
    for n, report in enumerate(reports):
        stats = report["listener_stats"]
        assert report["listener_connected"], f"process {n}'s listener is not connected"
        assert stats["connection_losses"] >= len(OUTAGES), stats
        assert stats["connects"] >= len(OUTAGES) + 1, stats
    assert problems == [[]] * PROCESSES, problems
    acked = await check_nothing_lost(pg_url, reports)

    written = reports[0]["acked"]["probe"]
    for w in windows:
        recovered = [recovery(r, w) for r in reports]
        for n, times in enumerate(recovered):
            assert max(times.values()) <= RECOVERY_BOUND_S, f"{w.kind}, process {n}: {times}"
        samples = [s for r in reports[1:] for s in staleness_after(written, r["seen"], w)]
        delays = [d for _t0, d in samples]
        settled = [d for t0, d in samples if t0 >= w.back + STALENESS_RECOVERY_S]
        assert delays and settled, f"{w.kind}: too few probe versions after the return"
        settled_after = back_under_bound(samples, w)
        assert settled_after <= STALENESS_RECOVERY_S, f"{w.kind}: stale {settled_after:.2f} s"
        assert max(delays) <= LISTENER_CHECK_S + STALENESS_BOUND_S, \
            f"{w.kind}: max staleness {max(delays):.2f} s"
        failed = [f for r in reports for f in r["failures"]
                  if w.cut <= f["t"] <= w.back + RECOVERY_BOUND_S]

        name = f"db_{w.kind}_outage"
        add_figure(figures, f"{name}_s", OUTAGE_S)
        add_figure(figures, f"{name}_failed_calls", len(failed))
        add_figure(figures, f"{name}_failed_calls_by_op",
                   dict(sorted(Counter(f["op"] for f in failed).items())))
        add_figure(figures, f"{name}_writes_recovered_max_s",
                   round(max(t for r in recovered for k, t in r.items() if k != "listener"), 3))
        add_figure(figures, f"{name}_listener_recovered_max_s",
                   round(max(r["listener"] for r in recovered), 3))
        add_figure(figures, f"{name}_staleness_back_under_bound_s", round(settled_after, 3))
        add_figure(figures, f"{name}_staleness_after_return_p50_ms",
                   round(percentile(delays, 50) * 1000, 1))
        add_figure(figures, f"{name}_staleness_after_return_p99_ms",
                   round(percentile(delays, 99) * 1000, 1))
        add_figure(figures, f"{name}_staleness_after_return_max_ms",
                   round(max(delays) * 1000, 1))
        add_figure(figures, f"{name}_staleness_settled_max_ms", round(max(settled) * 1000, 1))
    add_figure(figures, "db_outage_processes", PROCESSES)
    add_figure(figures, "db_outage_acked_writes", acked)
    add_figure(figures, "db_outage_failed_call_types", sorted(types))
