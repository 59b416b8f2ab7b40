"""The SQLite backend: group commit, isolation of failing writes, pragmas, errors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from stm_core.errors import ConfigurationError, StorageError
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_sqlite_url

from .helpers import NOW, sqlite_adapter, turn


@contextlib.asynccontextmanager
async def writer_paused(adapter: SqliteAdapter) -> AsyncIterator[None]:
    """Hold the writer thread on a job for the length of the block, so every
    write queued meanwhile lands in the next batch."""
    started, release = threading.Event(), threading.Event()

    def hold(_conn: sqlite3.Connection, _arg: None) -> None:
        started.set()
        release.wait(10)

    blocker = asyncio.ensure_future(adapter.writer.run(hold, None))
    while not started.is_set():
        await asyncio.sleep(0.001)
    try:
        yield
    finally:
        release.set()
        await blocker


async def wait_until_queued(adapter: SqliteAdapter, n: int) -> None:
    for _ in range(5000):
        if adapter.writer.queued() >= n:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"only {adapter.writer.queued()} of {n} writes got queued")


async def test_queued_writes_commit_as_one_batch_and_all_land(adapter: SqliteAdapter) -> None:
    n = 120
    async with writer_paused(adapter):
        tasks = [asyncio.ensure_future(adapter.capture(turn(f"c{i}"))) for i in range(n)]
        await wait_until_queued(adapter, n)
    results = await asyncio.gather(*tasks)
    assert all(len(r) == 2 for r in results)
    assert adapter.writer.stats.largest_batch >= n
    assert adapter.writer.stats.retried_batches == 0  # nothing failed: no savepoints
    assert await adapter.count_memories() == 2 * n
    for i in range(n):
        stored = await adapter.get_memory(MemoryKey.server("g1", f"c{i}", None))
        assert stored == results[i][0]


async def test_a_failing_write_in_a_batch_loses_nobody_elses(adapter: SqliteAdapter) -> None:
    # scope_kind outside ('server', 'user') violates a CHECK constraint in SQL.
    bad = CaptureWrite(key=MemoryKey(scope_kind="bogus", server_id="g1",  # type: ignore[arg-type]
                                     user_id="", channel_id="c0", persona_id=""),
                       messages=(), now_ms=NOW, counter_increment=1)
    async with writer_paused(adapter):
        good = [asyncio.ensure_future(adapter.capture(turn(f"c{i}"))) for i in range(20)]
        # A call whose second write fails: its first write must roll back too.
        mixed = asyncio.ensure_future(adapter.capture([turn("mixed")[0], bad]))
        more = [asyncio.ensure_future(adapter.capture(turn(f"d{i}"))) for i in range(20)]
        await wait_until_queued(adapter, 41)
    with pytest.raises(StorageError) as failure:
        await mixed
    assert isinstance(failure.value.__cause__, sqlite3.IntegrityError)
    await asyncio.gather(*good, *more)
    assert adapter.writer.stats.largest_batch >= 41
    # The batch ran without savepoints, failed, and ran again job by job.
    assert adapter.writer.stats.retried_batches == 1
    assert adapter.writer.stats.failed_jobs == 1
    assert await adapter.count_memories() == 80
    assert await adapter.get_memory(MemoryKey.server("g1", "mixed", None)) is None


async def test_a_thousand_concurrent_turns_over_many_channels_are_exact(
        adapter: SqliteAdapter) -> None:
    n, channels = 1000, 50
    await asyncio.gather(*(adapter.capture(turn(f"c{i % channels}", now=NOW + i))
                           for i in range(n)))
    rows = await adapter.load_server_memories("g1", updated_since_ms=0)
    assert sum(r.turns_since_refresh for r in rows) == n
    assert len(rows) == channels


async def test_two_adapters_on_one_file_never_see_a_locked_database(tmp_path: Path) -> None:
    """Two writers (as from two processes) contend for SQLite's one write lock."""
    first, second = sqlite_adapter(tmp_path / "stm.db"), sqlite_adapter(tmp_path / "stm.db")
    statuses = await asyncio.gather(first.setup(), second.setup())
    assert sorted(s.created for s in statuses) == [False, True]
    try:
        await asyncio.gather(*(a.capture(turn("shared", now=NOW + i))
                               for i in range(300) for a in (first, second)))
        stored = await first.get_memory(MemoryKey.server("g1", "shared", None))
        assert stored is not None and stored.turns_since_refresh == 600
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize("synchronous, expected", [("NORMAL", 1), ("FULL", 2)])
async def test_every_connection_gets_the_pragmas(tmp_path: Path, synchronous: str,
                                                 expected: int) -> None:
    adapter = sqlite_adapter(tmp_path / "stm.db", Settings(sqlite_synchronous=synchronous))
    await adapter.setup()

    def pragmas(conn: sqlite3.Connection, _: object) -> tuple[object, ...]:
        return tuple(conn.execute(f"PRAGMA {p}").fetchone()[0]
                     for p in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys"))

    try:
        assert adapter.reader is not None
        assert await adapter.reader.run(pragmas, None) == ("wal", expected, 5000, 1)
        # The writer waits for other processes' locks itself, so that an
        # inline write's BEGIN IMMEDIATE never blocks its caller's loop; with
        # FULL no write runs inline (each commit waits for the disk).
        inline = synchronous != "FULL"
        assert adapter.writer.runs_inline is inline
        assert await adapter.writer.run(pragmas, None) == ("wal", expected,
                                                           0 if inline else 5000, 1)
    finally:
        await adapter.aclose()


async def test_without_inline_writes_the_writer_keeps_sqlites_busy_timeout(
        tmp_path: Path) -> None:
    adapter = sqlite_adapter(tmp_path / "stm.db", Settings(sqlite_inline_writes=False))
    await adapter.setup()
    try:
        assert not adapter.writer.runs_inline
        assert await adapter.writer.run(
            lambda conn, _: conn.execute("PRAGMA busy_timeout").fetchone()[0], None) == 5000
        jobs = adapter.writer.stats.jobs
        await adapter.capture(turn("c1"))
        assert adapter.writer.stats.inline_jobs == 0
        assert adapter.writer.stats.jobs == jobs + 1
    finally:
        await adapter.aclose()


async def test_writes_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "stm.db"
    first = sqlite_adapter(path)
    await first.setup()
    written = await first.capture(turn("c1", texts=("before restart",)))
    await first.aclose()
    second = sqlite_adapter(path)
    try:
        status = await second.setup()
        assert (status.created, status.from_version) == (False, MIGRATIONS[-1].version)
        assert await second.get_memory(written[0].key) == written[0]
        assert await second.get_memory(written[1].key) == written[1]
    finally:
        await second.aclose()


async def test_close_waits_for_queued_writes(tmp_path: Path) -> None:
    path = tmp_path / "stm.db"
    adapter = sqlite_adapter(path)
    await adapter.setup()
    pending = [asyncio.ensure_future(adapter.capture(turn(f"c{i}"))) for i in range(50)]
    await asyncio.sleep(0)  # let them enqueue
    await adapter.aclose()
    await asyncio.gather(*pending)
    reopened = sqlite_adapter(path)
    await reopened.setup()
    try:
        assert await reopened.count_memories() == 100
    finally:
        await reopened.aclose()


def test_open_and_close_start_only_the_two_database_threads_and_end_them(
        tmp_path: Path) -> None:
    """A short command (``stm server params show``) pays for no helper thread:
    closing waits for the workers without ``asyncio.to_thread``."""
    started: list[str] = []
    real_start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    async def open_read_close() -> None:
        adapter = sqlite_adapter(tmp_path / "stm.db")
        await adapter.setup()
        await adapter.capture(turn("c1"))
        assert await adapter.count_memories() == 2
        await adapter.aclose()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threading.Thread, "start", counting_start)
        asyncio.run(open_read_close())  # its own loop: asyncio.run's executor is visible

    assert sorted(started) == ["stm-sqlite-reader", "stm-sqlite-writer"]
    assert not [t for t in threading.enumerate() if t.name.startswith("stm-sqlite")]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_close_of_an_adapter_whose_thread_already_ended_returns(tmp_path: Path) -> None:
    adapter = sqlite_adapter(tmp_path / "stm.db")
    await adapter.setup()
    adapter.writer._queue.put(object())  # a job the thread cannot unpack: it dies
    for _ in range(1000):
        if adapter.writer._thread is not None and not adapter.writer._thread.is_alive():
            break
        await asyncio.sleep(0.001)
    assert adapter.writer._thread is not None and not adapter.writer._thread.is_alive()
    await asyncio.wait_for(adapter.aclose(), 5)


async def test_a_closed_adapter_refuses_work(tmp_path: Path) -> None:
    adapter = sqlite_adapter(tmp_path / "stm.db")
    await adapter.setup()
    await adapter.aclose()
    with pytest.raises(StorageError, match="closed"):
        await adapter.capture(turn("c1"))
    with pytest.raises(StorageError, match="closed"):
        await adapter.count_memories()
    await adapter.aclose()  # twice is fine


async def test_use_before_setup_is_an_error(tmp_path: Path) -> None:
    adapter = sqlite_adapter(tmp_path / "stm.db")
    with pytest.raises(StorageError, match="setup"):
        await adapter.count_memories()
    await adapter.aclose()


async def test_a_missing_folder_is_a_configuration_error(tmp_path: Path) -> None:
    adapter = sqlite_adapter(tmp_path / "no" / "such" / "stm.db")
    with pytest.raises(ConfigurationError, match="does not exist"):
        await adapter.setup()
    await adapter.aclose()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` unwritable even for root (``chattr +i``), or skip."""
    os.chmod(path, 0o444)
    immutable = False
    try:
        if os.access(path, os.W_OK):  # root ignores modes
            if shutil.which("chattr") is None or subprocess.run(
                    ["chattr", "+i", str(path)], capture_output=True).returncode != 0:
                pytest.skip("cannot make a file read-only for this user")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        os.chmod(path, 0o644)


async def test_writing_a_read_only_file_raises_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "stm.db"
    adapter = sqlite_adapter(path)
    await adapter.setup()
    stored = await adapter.capture(turn("c1"))
    await adapter.aclose()
    with read_only(path):
        adapter = sqlite_adapter(path)
        try:
            await adapter.setup()  # up to date: needs no write
            with pytest.raises(StorageError, match="readonly") as failure:
                await adapter.capture(turn("c1", now=NOW + 1))
            assert isinstance(failure.value.__cause__, sqlite3.OperationalError)
            assert await adapter.get_memory(stored[0].key) == stored[0]
        finally:
            await adapter.aclose()


async def test_in_memory_database_lives_as_long_as_the_adapter() -> None:
    adapter = SqliteAdapter(parse_sqlite_url("sqlite+aiosqlite:///:memory:"))
    await adapter.setup()
    try:
        assert adapter.reader is None  # reads go through the one connection
        await adapter.capture(turn("c1"))
        assert await adapter.count_memories() == 2
    finally:
        await adapter.aclose()
    other = SqliteAdapter(parse_sqlite_url("sqlite+aiosqlite:///:memory:"))
    assert (await other.setup()).created
    try:
        assert await other.count_memories() == 0
    finally:
        await other.aclose()
