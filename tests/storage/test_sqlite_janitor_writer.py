"""What a turn write waits for on SQLite's one writer while the janitor works.

A purge batch never shares a transaction (and so a commit) with turn writes
drained beside it; it runs in slices and gives way to a write that waits; and
WAL checkpoints stay on the reader unless the writer must finish the tail.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from stm_core.errors import StorageError
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_plugins.sqlalchemy_storage import sqlite_adapter as sa_mod
from stm_plugins.sqlalchemy_storage import sqlite_purge
from stm_plugins.sqlalchemy_storage.sqlite_adapter import (
    CHECKPOINT_WAL_BYTES,
    SqliteAdapter,
    WalGrowth,
    passive_checkpoint,
)
from stm_plugins.sqlalchemy_storage.sqlite_precompiled import STATEMENTS
from stm_plugins.sqlalchemy_storage.sqlite_purge import purge_in_slices
from tests.reliability.support import ROOT, child_env

from .helpers import NOW, turn
from .janitor_procs import LIVE_SERVER, live_key
from .test_janitor_scattered import (
    OLD_SERVER,
    ROWS,
    finish,
    fresh_keys,
    is_old,
    old_left,
    open_real,
    read_line,
    seed_backlog,
    stored_keys,
)
from .test_sqlite_writer import wait_until_queued, writer_paused

PURGE = STATEMENTS["purge"]


async def test_a_job_run_alone_gets_its_own_transaction_after_the_others(
        adapter: SqliteAdapter) -> None:
    order: list[str] = []

    path = adapter.target.path
    assert path is not None

    def alone(conn: sqlite3.Connection, _arg: None) -> int:
        order.append("alone")
        # The turn writes drained with it are committed already: another
        # connection sees them.
        other = sqlite3.connect(path)
        try:
            return int(other.execute("SELECT count(*) FROM stm_memories").fetchone()[0])
        finally:
            other.close()

    async with writer_paused(adapter):
        first = asyncio.ensure_future(adapter.writer.run(alone, None, alone=True))
        await wait_until_queued(adapter, 1)
        turns = [asyncio.ensure_future(adapter.capture(turn(f"c{i}"))) for i in range(3)]
        await wait_until_queued(adapter, 4)
    seen = await first
    await asyncio.gather(*turns)
    assert order == ["alone"]
    assert seen == 6  # queued first, it ran after the three turns' commit


async def test_a_failing_job_run_alone_fails_only_itself(adapter: SqliteAdapter) -> None:
    def boom(conn: sqlite3.Connection, _arg: None) -> None:
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    async with writer_paused(adapter):
        failing = asyncio.ensure_future(adapter.writer.run(boom, None, alone=True))
        turns = [asyncio.ensure_future(adapter.capture(turn(f"c{i}"))) for i in range(2)]
        await wait_until_queued(adapter, 3)
    with pytest.raises(StorageError):
        await failing
    assert all(len(r) == 2 for r in await asyncio.gather(*turns))
    # The turns never needed the savepoint retry: the failure was not in their batch.
    assert adapter.writer.stats.retried_batches == 0
    assert await adapter.count_memories() == 4


def seeded(path: Path, rows: int, *, scattered: bool) -> sqlite3.Connection:
    """A table of ``rows`` old rows (every other one, when scattered, among fresh ones)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE stm_memories (id INTEGER PRIMARY KEY, updated_at_ms INTEGER)")
    conn.execute("CREATE INDEX by_age ON stm_memories (updated_at_ms)")
    values = [(i, (i * 7919) % rows if not scattered or i % 2 else NOW + i)
              for i in range(1, 2 * rows + 1 if scattered else rows + 1)]
    with conn:  # one transaction, not one per row
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO stm_memories VALUES (?, ?)", values)
    return conn


def purge_params(batch: int, window: int) -> dict[str, Any]:
    return {"cutoff": NOW, "bound": NOW, "window": window, "batch": batch}


@pytest.mark.parametrize("scattered", [False, True])
@pytest.mark.parametrize(("batch", "window"), [(1, 1), (63, 200), (64, 64), (65, 65),
                                               (300, 2000), (500, 500)])
def test_slices_delete_what_one_statement_would(tmp_path: Path, scattered: bool, batch: int,
                                                window: int) -> None:
    one = seeded(tmp_path / "one.db", 700, scattered=scattered)
    sliced = seeded(tmp_path / "sliced.db", 700, scattered=scattered)
    expected = sorted(r[0] for r in one.execute(PURGE.sql, PURGE.named(
        purge_params(batch, window))).fetchall())
    done = purge_in_slices(sliced, PURGE, purge_params(batch, window), lambda: 0)
    assert not done.yielded
    assert sorted(r[0] for r in done.rows) == expected
    remaining = "SELECT id FROM stm_memories ORDER BY id"
    assert sliced.execute(remaining).fetchall() == one.execute(remaining).fetchall()


def test_a_batch_gives_way_to_a_waiting_write_after_its_first_slices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = seeded(tmp_path / "s.db", 1000, scattered=True)
    monkeypatch.setattr(sqlite_purge, "YIELD_AFTER_S", 0.0)
    done = purge_in_slices(conn, PURGE, purge_params(500, 2000), lambda: 1)
    assert done.yielded and len(done.rows) == sqlite_purge.SLICE_ROWS
    monkeypatch.setattr(sqlite_purge, "YIELD_AFTER_S", 3600.0)
    done = purge_in_slices(conn, PURGE, purge_params(500, 2000), lambda: 1)
    assert not done.yielded and len(done.rows) == 500  # not held long enough to give way


def test_a_batch_that_ends_with_a_full_slice_does_not_say_it_yielded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = seeded(tmp_path / "s.db", 256, scattered=False)
    monkeypatch.setattr(sqlite_purge, "YIELD_AFTER_S", 0.0)
    size = sqlite_purge.SLICE_ROWS
    done = purge_in_slices(conn, PURGE, purge_params(size, 2 * size), lambda: 1)
    assert not done.yielded and len(done.rows) == size


async def test_a_janitor_giving_way_at_every_slice_still_deletes_every_old_row(
        adapter: SqliteAdapter, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(300):
        await adapter.capture(turn(f"old{i}", now=NOW - 10_000))
    await adapter.capture(turn("fresh", now=NOW))
    monkeypatch.setattr(sqlite_purge, "YIELD_AFTER_S", 0.0)
    monkeypatch.setattr(adapter.writer, "queued", lambda: 1)  # a write always waits
    first = await adapter.purge_older_than(NOW - 1, batch_size=200)
    # A batch that gave way left rows of its window: the next one goes on with it.
    assert first == sqlite_purge.SLICE_ROWS and adapter._purge_window[1] != 0
    deleted, calls = first, 1
    while (n := await adapter.purge_older_than(NOW - 1, batch_size=200)) > 0:
        deleted, calls = deleted + n, calls + 1
        assert n <= sqlite_purge.SLICE_ROWS
    assert deleted == 600 and calls >= 600 // sqlite_purge.SLICE_ROWS
    assert await adapter.count_memories() == 2
    assert await adapter.get_memory(MemoryKey.server("g1", "fresh", None)) is not None


def test_the_reader_checkpoints_until_it_has_caught_up(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("PRAGMA journal_size_limit=65536")
    writer.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    with writer:
        writer.execute("BEGIN")
        writer.executemany("INSERT INTO t (b) VALUES (?)", [("x" * 500,)] * 3000)
    reader = sqlite3.connect(path, isolation_level=None)
    assert passive_checkpoint(reader) is True
    big = os.stat(f"{path}-wal").st_size
    writer.execute("INSERT INTO t (b) VALUES ('y')")  # starts the WAL over, cut back
    assert os.stat(f"{path}-wal").st_size < big
    memory = sqlite3.connect(":memory:")
    assert passive_checkpoint(memory) is True  # not in WAL mode: nothing to do


async def test_a_reader_that_caught_up_asks_the_writer_for_no_checkpoint(
        adapter: SqliteAdapter, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(adapter.writer, "request_idle_checkpoint",
                        lambda *, even_if_busy=False: asked.append(even_if_busy))
    await adapter._run_checkpoint()
    assert asked == []
    monkeypatch.setattr(sa_mod, "CATCH_UP_PASSES", 0)  # never caught up
    await adapter._run_checkpoint()
    assert asked == [False]


def test_a_checkpoint_is_due_per_step_of_growth_and_again_after_the_file_is_cut_back() -> None:
    step = CHECKPOINT_WAL_BYTES
    growth = WalGrowth()
    assert not growth.due(0) and not growth.due(step - 1)
    assert growth.due(step)
    # Still over the threshold, but no bigger: not due at every look.
    assert not growth.due(step) and not growth.due(2 * step - 1)
    assert growth.due(2 * step + 5)
    assert not growth.due(3 * step)
    # The WAL started over and the file was cut back: due again past one step.
    assert not growth.due(step // 2)
    assert growth.due(step)


def test_a_reader_behind_an_older_snapshot_keeps_the_checkpoint_from_catching_up(
        tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM t").fetchone()  # a snapshot from before the rows
    writer.executemany("INSERT INTO t (b) VALUES (?)", [("x" * 500,)] * 200)
    reader = sqlite3.connect(path, isolation_level=None)
    assert passive_checkpoint(reader) is False  # frames past the snapshot stay
    holder.execute("COMMIT")
    assert passive_checkpoint(reader) is True


# -- processes: killed inside a batch, and several at once -------------------------------
async def janitor_child(*args: str, **env: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.storage.janitor_procs", *args, cwd=ROOT,
        env=child_env(**env), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_a_janitor_killed_between_two_slices_of_a_batch_deletes_none_of_it(
        sqlite_url: str) -> None:
    async with open_real(sqlite_url, Settings()) as stm:
        cutoff = await seed_backlog(stm.adapter)
    old = sum(1 for n in range(ROWS) if is_old(n))
    proc = await janitor_child("sliced-janitor", sqlite_url)
    assert await read_line(proc) == "ready"
    for k in (1, 2, 3):  # three slices of the first batch deleted, not committed
        assert await read_line(proc) == f"slice {5 * k}"
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()

    with sqlite3.connect(sqlite_url.split(":///", 1)[1]) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    async with open_real(sqlite_url, Settings()) as stm:
        assert await old_left(stm.adapter, cutoff) == old  # all of the batch or none
        assert await stm.janitor.run_once() == old
        assert await stored_keys(stm.adapter, OLD_SERVER) == fresh_keys()


async def test_janitors_of_several_processes_giving_way_at_every_slice_delete_it_once(
        sqlite_url: str) -> None:
    """Three janitor processes whose batches stop after one 3-row slice, as if
    a turn write always waited, beside two writers: every old row goes, once,
    in batches of at most one slice."""
    slices = {"STM_TEST_PURGE_SLICE_ROWS": "3", "STM_TEST_PURGE_GIVE_WAY": "1"}
    async with open_real(sqlite_url, Settings()) as stm:
        cutoff = await seed_backlog(stm.adapter)
        writers = [await janitor_child("write", sqlite_url, tag, "300") for tag in ("a", "b")]
        janitors = [await janitor_child("janitor", sqlite_url, **slices) for _ in range(3)]
        for proc in (*writers, *janitors):
            assert await read_line(proc) == "ready"
        totals = []
        for proc in janitors:
            done_before = 0
            while (line := await read_line(proc, timeout=120)).startswith("batch "):
                done = int(line.split()[1])
                assert 0 < done - done_before <= 3  # one slice, then it gave way
                done_before = done
            assert line.startswith("done "), line
            assert await proc.wait() == 0
            totals.append(int(line.split()[1]))
        for proc in writers:
            await finish(proc)
        assert sum(totals) == sum(1 for n in range(ROWS) if is_old(n))
        assert await old_left(stm.adapter, cutoff) == 0
        assert await stored_keys(stm.adapter, OLD_SERVER) == fresh_keys()
        assert await stored_keys(stm.adapter, LIVE_SERVER) == {
            live_key(tag, n) for tag in ("a", "b") for n in range(300)}
