"""The writer never checkpoints inside a commit, yet the WAL stays bounded."""

from __future__ import annotations

import asyncio
import os
import sqlite3

from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey
from stm_plugins.sqlalchemy_storage.sqlite_adapter import WRITER_CHECKPOINT_WAL_BYTES
from tests.conftest import OpenStm


async def test_wal_is_checkpointed_beside_the_writer(open_stm: OpenStm, tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "wal.db")
    async with open_stm(f"sqlite+aiosqlite:///{path}") as stm:
        body = "x" * 2000
        written = 0
        for turn in range(1500):
            now = stm.clock.now_ms()
            messages = tuple(CrudeMessage(role="user", content=f"{turn}-{i}-{body}",
                                          speaker_name="Ann", timestamp_ms=now)
                             for i in range(10))
            await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g", f"c{turn % 50}", "p"),
                                            messages=messages, now_ms=now)])
            written += 10 * len(body)
        wal = os.stat(path + "-wal").st_size
        # ~30 MB went through the WAL; checkpoints let SQLite reuse it. Past
        # 16 MiB the writer itself finishes a checkpoint between two batches,
        # so the file stays under that and a write, even when the reader's
        # checkpoints fall behind on a busy machine.
        assert written > 25_000_000
        assert wal < WRITER_CHECKPOINT_WAL_BYTES + 1_000_000
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
