"""SQLite memory writes on the caller's thread when nothing else waits.

A lone write runs inline: no thread hop, committed before it returns, also
on a loop that always has other callbacks ready (a bot's heartbeat, other
tasks), which it holds for one write per pass of the loop. Every other case
goes to the writer thread as before: all but the first of concurrent callers
(group commit), a second write before a busy loop ran its callbacks, a job
of the thread's still pending, another process holding the write lock (the
loop must not block on it), a write of many rows, or the setting turned off.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stm_core.errors import ConfigurationError, StorageError
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_plugins.sqlalchemy_storage.sqlite_adapter import INLINE_MAX_ROWS, SqliteAdapter
from stm_plugins.sqlalchemy_storage.sqlite_worker import SqliteWorker, loop_is_idle
from stm_plugins.sqlalchemy_storage.urls import parse_sqlite_url

from .helpers import NOW, sqlite_adapter, turn
from .test_sqlite_writer import writer_paused


async def idle_loop() -> None:
    """Let whatever the fixture left on the loop run: the loop is then idle."""
    await asyncio.sleep(0.01)


def counter(path: Path, channel: str) -> int | None:
    """What another connection sees: the live row's counter, committed."""
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT turns_since_refresh FROM stm_memories "
                           "WHERE scope_kind = 'server' AND channel_id = ?",
                           (channel,)).fetchone()
    return None if row is None else int(row[0])


async def test_a_lone_write_runs_inline_and_is_committed_when_it_returns(
        adapter: SqliteAdapter, tmp_path: Path) -> None:
    stats = adapter.writer.stats
    jobs, inline = stats.jobs, stats.inline_jobs
    thread = threading.get_ident()
    seen: list[int] = []
    original = adapter.writer._job_and_commit

    def spy(conn: sqlite3.Connection, fn: Any, arg: Any) -> tuple[bool, Any]:
        seen.append(threading.get_ident())
        return original(conn, fn, arg)

    adapter.writer._job_and_commit = spy  # type: ignore[method-assign]
    await idle_loop()
    for n in range(3):
        rows = await adapter.capture(turn("c1", now=NOW + n))
        assert rows[0].turns_since_refresh == n + 1
        assert counter(tmp_path / "stm.db", "c1") == n + 1  # committed already
    assert seen == [thread] * 3  # on the caller's thread
    assert (stats.jobs, stats.inline_jobs) == (jobs, inline + 3)


async def test_concurrent_writes_go_to_the_thread_and_commit_together(
        adapter: SqliteAdapter) -> None:
    await idle_loop()
    inline = adapter.writer.stats.inline_jobs
    results = await asyncio.gather(*(adapter.capture(turn(f"c{i}")) for i in range(50)))
    assert [r[0].turns_since_refresh for r in results] == [1] * 50
    # The first caller holds the loop for its write; the others, ready on the
    # loop meanwhile, go to the thread.
    assert adapter.writer.stats.inline_jobs == inline + 1
    assert adapter.writer.stats.largest_batch > 1


async def test_a_busy_loop_is_held_for_one_write_per_pass(adapter: SqliteAdapter) -> None:
    await idle_loop()
    stats = adapter.writer.stats
    inline, jobs = stats.inline_jobs, stats.jobs
    ran: list[int] = []
    loop = asyncio.get_running_loop()
    loop.call_soon(ran.append, 1)
    await adapter.capture(turn("c1"))  # inline: the callback waits for one write
    assert (stats.inline_jobs, ran) == (inline + 1, [])
    await adapter.capture(turn("c1"))  # the callback has not run: to the thread
    assert (stats.inline_jobs, stats.jobs, ran) == (inline + 1, jobs + 1, [1])
    loop.call_soon(ran.append, 2)
    await adapter.capture(turn("c1"))  # the loop ran its callbacks since
    assert (stats.inline_jobs, ran) == (inline + 2, [1])


async def test_a_lone_caller_on_a_loop_that_is_never_idle_writes_inline(
        adapter: SqliteAdapter) -> None:
    """Other tasks that always have a callback ready (one that wakes at every
    pass, a heartbeat on a timer): each turn of a caller that awaits between
    turns, as a bot awaits its model, still runs inline."""
    stop = False

    async def spinner() -> None:
        while not stop:
            await asyncio.sleep(0)

    async def heartbeat() -> None:
        while not stop:
            await asyncio.sleep(0.0005)

    await idle_loop()
    tasks = [asyncio.ensure_future(spinner()), asyncio.ensure_future(heartbeat())]
    stats = adapter.writer.stats
    inline, jobs = stats.inline_jobs, stats.jobs
    try:
        for n in range(30):
            await asyncio.sleep(0)  # the model's answer, elsewhere
            assert not loop_is_idle(asyncio.get_running_loop())
            rows = await adapter.capture(turn("c1", now=NOW + n))
            assert rows[0].turns_since_refresh == n + 1
    finally:
        stop = True
        await asyncio.gather(*tasks)
    assert (stats.inline_jobs, stats.jobs) == (inline + 30, jobs)


def test_a_loop_that_does_not_say_what_is_ready_is_never_taken_for_idle() -> None:
    """uvloop and other loops keep no ``_ready``: every write goes to the thread."""
    class OtherLoop:
        pass

    assert loop_is_idle(OtherLoop()) is False  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    try:
        assert loop_is_idle(loop) is True
        loop.call_soon(lambda: None)
        assert loop_is_idle(loop) is False
    finally:
        loop.close()


async def test_a_write_waits_for_the_threads_pending_jobs(adapter: SqliteAdapter) -> None:
    """Queued earlier (its caller may have been cancelled), committed first."""
    order: list[str] = []

    def first(conn: sqlite3.Connection, _: None) -> None:
        order.append("queued")

    async with writer_paused(adapter):
        queued = asyncio.ensure_future(adapter.writer.run(first, None))
        await asyncio.sleep(0.01)
        queued.cancel()  # the caller gives up; the job still runs
        late = asyncio.ensure_future(adapter.writer.run(
            lambda conn, _: order.append("late"), None, inline=True))
        await asyncio.sleep(0.01)
        assert order == []  # neither ran while the thread was busy
    await late
    assert order == ["queued", "late"]


async def test_a_write_waits_for_a_job_the_thread_took_but_has_not_run(
        adapter: SqliteAdapter) -> None:
    """Taken from the queue, not yet holding the connection: still pending."""
    order: list[str] = []
    taken, go = threading.Event(), threading.Event()
    original = adapter.writer._run_taken

    def slow_start(conn: sqlite3.Connection, batch: list[Any]) -> None:
        taken.set()
        go.wait(10)
        original(conn, batch)

    adapter.writer._run_taken = slow_start  # type: ignore[method-assign]
    first = asyncio.ensure_future(adapter.writer.run(
        lambda conn, _: order.append("first"), None))
    assert await asyncio.to_thread(taken.wait, 10)
    assert adapter.writer.queued() == 0  # the thread has it
    await idle_loop()
    late = asyncio.ensure_future(adapter.writer.run(
        lambda conn, _: order.append("late"), None, inline=True))
    await asyncio.sleep(0.01)
    assert order == []
    go.set()
    await asyncio.gather(first, late)
    assert order == ["first", "late"]


async def test_another_processs_write_lock_never_blocks_the_loop(
        adapter: SqliteAdapter, tmp_path: Path) -> None:
    holder = sqlite3.connect(tmp_path / "stm.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    beat = asyncio.ensure_future(heartbeat())
    await asyncio.sleep(0.02)  # the heartbeat's timer is set: the loop is idle
    started = time.monotonic()
    write = asyncio.ensure_future(adapter.capture(turn("c1")))
    await asyncio.sleep(0)
    assert time.monotonic() - started < 0.1  # the write did not wait on the loop
    await asyncio.sleep(0.3)
    assert not write.done()
    assert ticks >= 20  # the loop went on while the write waited for the lock
    holder.execute("COMMIT")
    holder.close()
    rows = await asyncio.wait_for(write, 10)
    beat.cancel()
    assert rows[0].turns_since_refresh == 1
    assert adapter.writer.stats.inline_jobs == 0


async def test_a_failing_inline_job_raises_and_the_next_write_runs(
        adapter: SqliteAdapter, tmp_path: Path) -> None:
    told: list[tuple[bool, Any]] = []

    def broken(conn: sqlite3.Connection, _: None) -> None:
        conn.execute("INSERT INTO stm_memories (scope_kind, channel_id, updated_at_ms, rev, "
                     "created_at_ms) VALUES ('server', 'x', 1, 1, 1)")
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    await idle_loop()
    with pytest.raises(StorageError, match="no_such_table"):
        await adapter.writer.run(broken, None, inline=True,
                                 report=lambda ok, value: told.append((ok, value)))
    assert [ok for ok, _ in told] == [False]
    assert adapter.writer.stats.inline_jobs == 1
    assert counter(tmp_path / "stm.db", "x") is None  # the first insert rolled back
    rows = await adapter.capture(turn("c1"))
    assert rows[0].turns_since_refresh == 1


async def test_an_interrupt_inside_an_inline_job_leaves_no_transaction_open(
        adapter: SqliteAdapter, tmp_path: Path) -> None:
    def interrupted(conn: sqlite3.Connection, _: None) -> None:
        conn.execute("INSERT INTO stm_memories (scope_kind, channel_id, updated_at_ms, rev, "
                     "created_at_ms) VALUES ('server', 'x', 1, 1, 1)")
        raise KeyboardInterrupt

    jobs = adapter.writer.stats.jobs
    await idle_loop()
    with pytest.raises(KeyboardInterrupt):
        await adapter.writer.run(interrupted, None, inline=True)
    assert adapter.writer.stats.jobs == jobs  # it ran inline, not on the thread
    assert counter(tmp_path / "stm.db", "x") is None
    rows = await adapter.capture(turn("c1"))
    assert rows[0].turns_since_refresh == 1


async def test_a_report_that_raises_fails_the_inline_write(adapter: SqliteAdapter) -> None:
    def report(ok: bool, value: object) -> None:
        raise RuntimeError("mirror broke")

    await idle_loop()
    with pytest.raises(RuntimeError, match="mirror broke"):
        await adapter.writer.run(lambda conn, _: 1, None, inline=True, report=report)
    assert adapter.writer.stats.inline_jobs == 1


async def test_a_write_of_many_rows_goes_to_the_thread(adapter: SqliteAdapter) -> None:
    inline = adapter.writer.stats.inline_jobs
    await idle_loop()
    now = NOW
    writes = [CaptureWrite(key=MemoryKey.server("g1", f"c{i}", None), messages=(), now_ms=now,
                           counter_increment=1) for i in range(INLINE_MAX_ROWS + 1)]
    await adapter.capture(writes)
    assert adapter.writer.stats.inline_jobs == inline
    await adapter.capture(writes[:INLINE_MAX_ROWS])
    assert adapter.writer.stats.inline_jobs == inline + 1


class LateFromOtherThreads:
    """A lock that any thread but the loop's takes only after a pause: the
    writer thread descheduled just then, as on a busy machine."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop_thread = threading.get_ident()

    def __enter__(self) -> None:
        if threading.get_ident() != self._loop_thread:
            time.sleep(0.2)
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


async def test_a_write_after_one_of_the_threads_runs_inline_however_late_the_thread_goes_on(
        adapter: SqliteAdapter) -> None:
    """The thread's job stops waiting once its outcome is settled on the loop,
    not when the thread gets round to counting it."""
    adapter.writer._pending_lock = LateFromOtherThreads()  # type: ignore[assignment]
    await idle_loop()
    inline = adapter.writer.stats.inline_jobs
    many = [CaptureWrite(key=MemoryKey.server("g1", f"c{i}", None), messages=(), now_ms=NOW,
                         counter_increment=1) for i in range(INLINE_MAX_ROWS + 1)]
    await adapter.capture(many)  # to the thread
    rows = await adapter.capture(turn("c0", now=NOW + 1))
    assert rows[0].turns_since_refresh == 2
    assert adapter.writer.stats.inline_jobs == inline + 1


async def test_a_checkpoint_request_wakes_a_thread_that_inline_writes_never_reach(
        adapter: SqliteAdapter, tmp_path: Path) -> None:
    for n in range(5):
        await adapter.capture(turn(f"c{n}"))
    batches = adapter.writer.stats.batches
    done = threading.Event()
    original = adapter.writer._checkpoint_if_idle

    def spy(conn: sqlite3.Connection) -> None:
        due = adapter.writer._checkpoint_due.is_set()
        original(conn)
        if due:
            done.set()

    adapter.writer._checkpoint_if_idle = spy  # type: ignore[method-assign]
    adapter.writer.request_idle_checkpoint()
    assert await asyncio.to_thread(done.wait, 5)
    assert adapter.writer.stats.batches == batches  # woken, no job run


async def test_an_in_memory_database_writes_inline() -> None:
    adapter = SqliteAdapter(parse_sqlite_url("sqlite:///:memory:"), Settings())
    await adapter.setup()
    try:
        assert adapter.writer.runs_inline
        await idle_loop()
        await adapter.capture(turn("c1"))
        assert adapter.writer.stats.inline_jobs == 1
    finally:
        await adapter.aclose()


async def test_a_journal_mode_whose_commits_wait_keeps_every_write_on_the_thread(
        tmp_path: Path) -> None:
    """Outside WAL a commit waits for readers (busy_timeout is needed): no inline."""
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(tmp_path / "delete.db", isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
        return conn

    worker = SqliteWorker(name="w", label="delete.db", connect=connect, transactional=True,
                          inline=True)
    await worker.start()
    try:
        assert not worker.runs_inline
        await worker.run(lambda conn, _: conn.execute("INSERT INTO t VALUES (1)"), None,
                         inline=True)
        assert (worker.stats.inline_jobs, worker.stats.jobs) == (0, 1)
        busy = await worker.run(
            lambda conn, _: conn.execute("PRAGMA busy_timeout").fetchone()[0], None)
        assert busy > 0
    finally:
        await worker.close()


async def test_with_synchronous_full_every_write_goes_to_the_thread(tmp_path: Path) -> None:
    """FULL syncs the log in every commit: the loop must not wait for the disk."""
    adapter = sqlite_adapter(tmp_path / "full.db", Settings(sqlite_synchronous="FULL"))
    await adapter.setup()
    try:
        assert not adapter.writer.runs_inline
        await idle_loop()
        await adapter.capture(turn("c1"))
        assert adapter.writer.stats.inline_jobs == 0
    finally:
        await adapter.aclose()


@pytest.mark.parametrize("raw", ["2", "maybe", "enabled"])
def test_the_setting_refuses_what_is_not_a_flag(monkeypatch: pytest.MonkeyPatch,
                                                 raw: str) -> None:
    monkeypatch.setenv("STM_SQLITE_INLINE_WRITES", raw)
    with pytest.raises(ConfigurationError, match="STM_SQLITE_INLINE_WRITES"):
        Settings.from_env()


@pytest.mark.parametrize("value", [1, "yes", None])
def test_the_setting_in_code_takes_only_a_bool(value: object) -> None:
    with pytest.raises(ConfigurationError, match="STM_SQLITE_INLINE_WRITES"):
        Settings(sqlite_inline_writes=value)  # type: ignore[arg-type]


def test_the_setting_reads_off_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STM_SQLITE_INLINE_WRITES", "0")
    assert Settings.from_env().sqlite_inline_writes is False
