"""The janitor on a scattered backlog, on real SQLite and PostgreSQL databases.

The backlog's old rows are spread through the table and their ages do not
follow the table's order, as when rows are written in place for months: the
purge takes them in windows (see ``statements.purge``), so these tests check
that every old row still goes, that nothing else does, and that a run cut off
half-way leaves a database the next run finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sqlite3
import sys
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from stm_core._util.clock import ManualClock, SystemClock
from stm_core.settings import DAY_MS, Settings
from stm_core.storage.protocol import StorageAdapter, StorageInventory
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from tests.reliability.support import ROOT, cache_problems, child_env

from .helpers import OpenStm
from .janitor_procs import JANITOR_SETTINGS, LIVE_SERVER, live_key

#: Rows of the backlog server; every fifth one is fresh, the others are old.
ROWS = 1500
OLD_SERVER = "backlog"


def is_old(n: int) -> bool:
    return n % 5 != 0


def backlog_key(n: int) -> MemoryKey:
    return MemoryKey.server(OLD_SERVER, f"c{n}", None)


def cutoff_now(settings: Settings) -> int:
    return SystemClock().now_ms() - settings.retention_ms


async def seed_backlog(adapter: StorageAdapter, rows: int = ROWS) -> int:
    """Rows ``c0..`` in table order; the old ones' ages are a permutation of
    their positions, so neighbours in age are far apart in the table.
    Returns the cutoff (the default retention from now)."""
    cutoff = cutoff_now(Settings())
    old_base = cutoff - 30 * DAY_MS
    for first in range(0, rows, 100):
        await adapter.capture([
            CaptureWrite(key=backlog_key(n), messages=(),
                         now_ms=old_base + (n * 7919) % rows if is_old(n) else cutoff + DAY_MS)
            for n in range(first, min(rows, first + 100))])
    return cutoff


async def stored_keys(adapter: StorageAdapter, server: str) -> set[MemoryKey]:
    return {r.key for r in await adapter.list_memories(MemoryFilter(server_id=server))}


def fresh_keys(rows: int = ROWS) -> set[MemoryKey]:
    return {backlog_key(n) for n in range(rows) if not is_old(n)}


async def old_left(adapter: StorageAdapter, cutoff: int) -> int:
    assert isinstance(adapter, StorageInventory)
    return await adapter.count_older_than(cutoff)


def open_real(url: str, settings: Settings) -> AbstractAsyncContextManager[Stm]:
    return open_store(url, settings=settings, clock=SystemClock(), load_entrypoints=False)


async def child(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storage.janitor_procs", *args, cwd=ROOT, env=child_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def read_line(proc: asyncio.subprocess.Process, timeout: float = 60) -> str:
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), timeout)).decode().strip()
    if not line:
        assert proc.stderr is not None
        raise AssertionError(f"the child ended: {(await proc.stderr.read()).decode()[-3000:]}")
    return line


async def finish(proc: asyncio.subprocess.Process) -> str:
    line = await read_line(proc, timeout=120)
    assert line.startswith("done "), line
    assert await proc.wait() == 0
    return line


def sqlite_path(url: str) -> str | None:
    return url.split(":///", 1)[1] if url.startswith("sqlite") else None


# -- the whole backlog goes, and only it ----------------------------------------------------
async def test_a_scattered_backlog_goes_while_other_processes_write(db_url: str) -> None:
    settings = Settings(janitor_batch_size=25, janitor_pause_ms=1)
    writers_turns = 300
    async with open_real(db_url, settings) as stm:
        cutoff = await seed_backlog(stm.adapter)
        writers = [await child("write", db_url, tag, str(writers_turns)) for tag in ("a", "b")]
        for proc in writers:
            assert await read_line(proc) == "ready"
        deleted = await stm.janitor.run_once()
        for proc in writers:
            await finish(proc)
        assert deleted == sum(1 for n in range(ROWS) if is_old(n))
        assert await old_left(stm.adapter, cutoff) == 0
        assert await stored_keys(stm.adapter, OLD_SERVER) == fresh_keys()
        assert await stored_keys(stm.adapter, LIVE_SERVER) == {
            live_key(tag, n) for tag in ("a", "b") for n in range(writers_turns)}


async def test_janitors_of_several_processes_share_a_backlog_and_delete_it_once(
        db_url: str) -> None:
    """Three janitor processes at once, each with its own windows, beside a
    writer: every old row goes, counted once in all, and nothing else."""
    async with open_real(db_url, Settings()) as stm:
        cutoff = await seed_backlog(stm.adapter)
        writer = await child("write", db_url, "w", "300")
        janitors = [await child("janitor", db_url) for _ in range(3)]
        for proc in (writer, *janitors):
            assert await read_line(proc) == "ready"
        totals = []
        for proc in janitors:
            while (line := await read_line(proc, timeout=120)).startswith("batch "):
                pass
            assert line.startswith("done "), line
            assert await proc.wait() == 0
            totals.append(int(line.split()[1]))
        await finish(writer)
        assert sum(totals) == sum(1 for n in range(ROWS) if is_old(n))
        assert await old_left(stm.adapter, cutoff) == 0
        assert await stored_keys(stm.adapter, OLD_SERVER) == fresh_keys()
        assert await stored_keys(stm.adapter, LIVE_SERVER) == {
            live_key("w", n) for n in range(300)}


async def test_janitors_on_several_connections_purge_at_once_without_a_deadlock(
        pg_url: str) -> None:
    """Four adapters (four connections, as four processes have) purge one
    scattered backlog at once in batches of different sizes, five times over:
    none waits for another (rows another holds are skipped), so none dies of
    a deadlock, and every old row goes exactly once."""
    rows = 3000
    old = sum(1 for n in range(rows) if is_old(n))
    async with contextlib.AsyncExitStack() as stack:
        stores = [await stack.enter_async_context(open_real(pg_url, Settings()))
                  for _ in range(4)]

        async def purge_all(adapter: StorageAdapter, cutoff: int, size: int) -> int:
            total = 0
            while (deleted := await adapter.purge_older_than(cutoff, batch_size=size)) > 0:
                total += deleted
            return total

        for _ in range(5):
            cutoff = await seed_backlog(stores[0].adapter, rows)
            totals = await asyncio.gather(*(
                purge_all(stm.adapter, cutoff, size)
                for stm, size in zip(stores, (7, 13, 25, 40), strict=True)))
            assert sum(totals) == old
            assert await old_left(stores[0].adapter, cutoff) == 0
            assert await stored_keys(stores[0].adapter, OLD_SERVER) == fresh_keys(rows)


async def test_every_batch_counts_exactly_and_zero_means_none_left(db_url: str) -> None:
    async with open_real(db_url, Settings()) as stm:
        adapter = stm.adapter
        cutoff = await seed_backlog(adapter)
        sizes = [7, 50, 3, 120, 1]  # the janitor's sizer changes the size between batches
        counts: list[int] = []
        while not counts or counts[-1]:
            size = sizes[len(counts) % len(sizes)]
            counts.append(await adapter.purge_older_than(cutoff, batch_size=size))
            assert 0 <= counts[-1] <= size
            if counts[-1] == 0:
                assert await old_left(adapter, cutoff) == 0
        assert sum(counts) == sum(1 for n in range(ROWS) if is_old(n))
        assert await stored_keys(adapter, OLD_SERVER) == fresh_keys()


async def test_rows_touched_during_a_run_stay(db_url: str) -> None:
    async with open_real(db_url, Settings()) as stm:
        adapter = stm.adapter
        cutoff = await seed_backlog(adapter)
        first = await adapter.purge_older_than(cutoff, batch_size=10)  # opens a window
        assert first == 10
        left = sorted(k.channel_id for k in await stored_keys(adapter, OLD_SERVER))
        old = [c for c in left if is_old(int(c[1:]))]
        touched = {MemoryKey.server(OLD_SERVER, c, None) for c in old[:: len(old) // 8]}
        await adapter.capture([CaptureWrite(key=k, messages=(), now_ms=cutoff + 1)
                               for k in touched])
        while await adapter.purge_older_than(cutoff, batch_size=10):
            pass
        assert await stored_keys(adapter, OLD_SERVER) == fresh_keys() | touched


async def test_a_purge_with_another_cutoff_keeps_to_it(db_url: str) -> None:
    async with open_real(db_url, Settings()) as stm:
        adapter = stm.adapter
        cutoff = await seed_backlog(adapter)
        assert await adapter.purge_older_than(cutoff, batch_size=10) == 10  # opens a window
        # Inside the window just opened (its 200 oldest rows): ~1 old row in 20 is older.
        earlier = cutoff - 30 * DAY_MS + ROWS // 20
        kept = {r.key for r in await adapter.list_memories(MemoryFilter(server_id=OLD_SERVER))
                if r.updated_at_ms >= earlier}
        while await adapter.purge_older_than(earlier, batch_size=10):
            pass
        assert await old_left(adapter, earlier) == 0
        assert await stored_keys(adapter, OLD_SERVER) == kept


# -- a run cut off half-way -------------------------------------------------------------------
async def test_a_killed_janitor_leaves_a_database_the_next_run_finishes(db_url: str) -> None:
    async with open_real(db_url, Settings()) as stm:
        cutoff = await seed_backlog(stm.adapter)
    proc = await child("janitor", db_url)
    assert await read_line(proc) == "ready"
    for _ in range(3):
        assert (await read_line(proc)).startswith("batch ")
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()

    path = sqlite_path(db_url)
    if path is not None:
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    async with open_real(db_url, JANITOR_SETTINGS) as stm:
        adapter = stm.adapter
        left = await old_left(adapter, cutoff)
        assert 0 < left < sum(1 for n in range(ROWS) if is_old(n))
        assert fresh_keys() <= await stored_keys(adapter, OLD_SERVER)
        assert await stm.janitor.run_once() == left
        assert await stored_keys(adapter, OLD_SERVER) == fresh_keys()


async def test_a_stopped_run_says_so_and_the_cache_stays_true(
        db_url: str, open_stm: OpenStm, clock: ManualClock,
        caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(janitor_batch_size=10, janitor_pause_ms=50)
    async with open_stm(db_url, settings=settings) as stm:
        await stm.engine.server_memories(OLD_SERVER)  # cached: it takes the rows written next
        for first in range(0, 200, 50):
            await stm.engine.capture([CaptureWrite(key=backlog_key(n), messages=(),
                                            now_ms=clock.now_ms() + n)
                               for n in range(first, first + 50)])
        clock.advance(ms=settings.retention_ms + 100)
        cutoff = clock.now_ms() - settings.retention_ms
        batches: list[int] = []
        run = asyncio.create_task(stm.janitor.run_once(progress=batches.append))
        while len(batches) < 2:
            await asyncio.sleep(0.005)
        with caplog.at_level(logging.WARNING, logger="stm.janitor"):
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
        [stopped] = [r.getMessage() for r in caplog.records if "stopped after" in r.getMessage()]
        # The cutoff as a date and an age, not milliseconds since 1970.
        assert str(cutoff) not in stopped
        assert re.search(r"untouched since \d{4}-\d\d-\d\d \d\d:\d\d UTC \("
                         rf"{settings.janitor_retention_days:g} days ago\) are left", stopped)
        assert await cache_problems(stm) == []
        assert 0 < await old_left(stm.adapter, cutoff) < 100
        await stm.engine.server_memories(OLD_SERVER)
        await stm.janitor.run_once()
        assert await old_left(stm.adapter, cutoff) == 0
        assert await cache_problems(stm) == []


async def test_sqlite_times_a_purge_batch_without_its_wait_behind_other_writes(
        tmp_path: Path) -> None:
    """A batch queued behind a slow write held SQLite's writer only while it ran."""
    url = f"sqlite:///{tmp_path / 'timed.db'}"
    async with open_real(url, Settings()) as stm:
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        cutoff = await seed_backlog(adapter, 200)
        slow = asyncio.ensure_future(adapter.writer.run(lambda conn, _: time.sleep(0.2), None))
        await asyncio.sleep(0.05)  # the slow job holds the writer now
        started = time.perf_counter()
        deleted = await adapter.purge_older_than(cutoff, batch_size=20)
        wall = time.perf_counter() - started
        await slow
        assert deleted == 20
        assert wall >= 0.1
        assert adapter.last_purge_seconds is not None
        assert 0 < adapter.last_purge_seconds < 0.1


async def sqlite_steps_per_batch(tmp_path: Path, rows: int) -> int:
    """The most SQLite VM steps (in thousands) one purge batch of 20 took, over
    a scattered backlog of ``rows`` old rows purged to the end."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    url = f"sqlite:///{tmp_path / f'steps{rows}.db'}"
    async with open_real(url, Settings()) as stm:
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        cutoff = await seed_backlog(adapter, rows)
        await adapter.writer.run(lambda conn, _: conn.set_progress_handler(count, 1000), None)
        most = 0
        while True:
            steps[0] = 0
            if await adapter.purge_older_than(cutoff, batch_size=20) == 0:
                return most
            most = max(most, steps[0])


async def test_a_batch_reads_no_more_of_a_large_backlog_than_of_a_small_one(
        tmp_path: Path) -> None:
    """A batch reads its window, not the backlog: ten times the old rows, about
    the same work per batch (a window's last batch once scanned every old row)."""
    small = await sqlite_steps_per_batch(tmp_path, 1_500)
    large = await sqlite_steps_per_batch(tmp_path, 15_000)
    assert large <= 2 * small + 5, (small, large)
