"""The writer never checkpoints inside a commit, yet the WAL stays bounded."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import threading

import pytest

from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey
from stm_core.store import Stm
from stm_plugins.sqlalchemy_storage import sqlite_adapter as sa_mod
from stm_plugins.sqlalchemy_storage.sqlite_adapter import (
    CHECKPOINT_CHECK_EVERY,
    WRITER_CHECKPOINT_WAL_BYTES,
)
from tests.conftest import OpenStm

BODY = "x" * 2000


class WalSizes:
    """The WAL file's size after every write: its largest, and what the writes
    that made it grow added to it."""

    def __init__(self, path: str) -> None:
        self.path = path + "-wal"
        self.last = self.largest = 0
        self.growths: list[int] = []

    def look(self) -> None:
        size = os.stat(self.path).st_size
        if size > self.last:
            self.growths.append(size - self.last)
        self.largest = max(self.largest, size)
        self.last = size

    def bound(self) -> int:
        """The policy's bound: past WRITER_CHECKPOINT_WAL_BYTES the writer
        finishes a checkpoint before its next write once a look at the WAL
        (one per CHECKPOINT_CHECK_EVERY writes) sees it; one write may be
        drained with the request, and one may split pages."""
        typical = statistics.mean(self.growths)
        return int(WRITER_CHECKPOINT_WAL_BYTES + (CHECKPOINT_CHECK_EVERY + 2) * typical
                   + max(self.growths))


async def write_turns(stm: Stm, turns: int, sizes: WalSizes) -> int:
    """Large turns, one after another; the bytes of message text written."""
    written = 0
    for turn in range(turns):
        now = stm.clock.now_ms()
        messages = tuple(CrudeMessage(role="user", content=f"{turn}-{i}-{BODY}",
                                      speaker_name="Ann", timestamp_ms=now)
                         for i in range(10))
        await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g", f"c{turn % 50}", "p"),
                                        messages=messages, now_ms=now)])
        written += 10 * len(BODY)
        sizes.look()
    return written


async def test_wal_is_checkpointed_beside_the_writer(open_stm: OpenStm, tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "wal.db")
    async with open_stm(f"sqlite+aiosqlite:///{path}") as stm:
        sizes = WalSizes(path)
        written = await write_turns(stm, 1500, sizes)
        # ~30 MB of text went through the WAL; checkpoints let SQLite reuse it.
        # Past 16 MiB the writer itself finishes a checkpoint before its next
        # write, even when the reader's checkpoints fall behind (a busy disk):
        # at no moment is the file larger than that and the writes between
        # two looks at it.
        assert written > 25_000_000
        assert sizes.largest <= sizes.bound(), (sizes.largest, sizes.bound())
        writer_autocheckpoint = await stm.adapter.writer.run(  # type: ignore[attr-defined]
            lambda conn, _: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0], None)
        assert writer_autocheckpoint == 0
        # The file is cut back when the WAL starts over, so its size tells when
        # 4 MiB more were written: one checkpoint per ~200 writes here, not one
        # at every look (every 64 writes) once the file had grown past 4 MiB.
        checkpoints = stm.adapter.reader.stats.jobs - 1  # type: ignore[attr-defined]
        assert 3 <= checkpoints <= 12
        # Most of these writes ran inline, one after another, never suspending:
        # the checkpoints' callbacks still ran (a loop with callbacks ready
        # sends the next write to the thread, which lets them).
        assert stm.adapter.writer.stats.inline_jobs > 1000  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_wal_stays_bounded_while_the_readers_checkpoint_does_not_end(
        open_stm: OpenStm, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint on the reader that takes as long as the run (a disk whose
    syncs crawl): the writer does not wait for it to end before bounding the WAL."""
    release = threading.Event()
    started = threading.Event()
    real = sa_mod.passive_checkpoint

    def stuck(conn: sqlite3.Connection, arg: object = None) -> bool:
        started.set()
        release.wait(60)
        return real(conn, arg)

    monkeypatch.setattr(sa_mod, "passive_checkpoint", stuck)
    path = os.path.join(str(tmp_path), "stuck.db")
    try:
        async with open_stm(f"sqlite+aiosqlite:///{path}") as stm:
            sizes = WalSizes(path)
            await write_turns(stm, 1000, sizes)
            assert started.is_set()
            assert sizes.largest <= sizes.bound(), (sizes.largest, sizes.bound())
            release.set()
    finally:
        release.set()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM stm_memories").fetchone()[0] == 50


async def test_wal_stays_bounded_when_the_writer_is_never_idle(open_stm: OpenStm,
                                                                tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "busy.db")
    async with open_stm(f"sqlite+aiosqlite:///{path}") as stm:
        body = "y" * 2000

        async def channel(n: int) -> None:
            for turn in range(40):
                now = stm.clock.now_ms()
                messages = tuple(CrudeMessage(role="model", content=f"{n}-{turn}-{i}-{body}",
                                              speaker_name=None, timestamp_ms=now)
                                 for i in range(10))
                await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g", f"c{n}", "p"),
                                                messages=messages, now_ms=now,
                                                counter_increment=1)])

        await asyncio.gather(*(channel(n) for n in range(50)))  # ~40 MB of writes
        # every counter exact
        assert os.stat(path + "-wal").st_size < 30_000_000
        rows = await stm.adapter.list_memories(MemoryFilter(server_id="g"))
        assert sorted(r.turns_since_refresh for r in rows) == [40] * 50
