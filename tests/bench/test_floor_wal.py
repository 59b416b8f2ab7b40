"""The write floors keep stm's checkpoint policy: their WAL stays bounded under
writes that never pause, as stm's does, and it starts over (on the thread
and on the caller's thread alike)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from bench import workload as w
from bench.floors_thread import InlineWriter, ThreadWriter
from bench.scenarios_record import thread_writer
from stm_core._util.clock import ManualClock
from stm_plugins.sqlalchemy_storage.sqlite_adapter import CHECKPOINT_WAL_BYTES

#: About 40 MiB through the WAL: ten times what one checkpoint is due after.
WRITES = 4000


@pytest.mark.parametrize("kind", [ThreadWriter, InlineWriter])
async def test_the_floors_wal_stays_bounded_and_starts_over(tmp_path: Path,
                                                            kind: type[ThreadWriter]) -> None:
    path = tmp_path / "floor.db"
    writer = await thread_writer(path, ManualClock(w.EPOCH_MS), kind=kind)
    body = "z" * 5000
    sizes = []
    try:
        for i in range(WRITES):
            await writer.write([{
                "scope_kind": "server", "server_id": "g", "user_id": "",
                "channel_id": f"c{i % 50}",
                "persona_id": "", "parent_channel_id": None, "persona_lineage_id": None,
                "messages": f'[{{"content":"{i}{body}"}}]', "inc": 1, "now": w.EPOCH_MS + i,
                "crude_ttl": 1, "summary_ttl": 1}])
            sizes.append(os.stat(f"{path}-wal").st_size)
    finally:
        await writer.close()
    assert max(sizes) < 8 * CHECKPOINT_WAL_BYTES
    # It started over (the file was cut back) more than once.
    assert sum(1 for a, b in itertools.pairwise(sizes) if b < a) >= 2
