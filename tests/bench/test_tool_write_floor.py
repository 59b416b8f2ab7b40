"""The tool-write floor does stm's tool write, no less: after the same calls on
rows the same record turns wrote, its database holds the rows and revisions
stm's holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from bench import workload as w
from bench.scenarios_record import (
    Workload,
    raw_record,
    stm_record,
    thread_tool_writer,
    thread_writer,
)
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from stm_core._util.clock import ManualClock

CHANNELS = 3
#: More calls per channel than revisions are kept, so the trim runs too.
CALLS = 3 * 14

ROWS = ("SELECT scope_kind, server_id, user_id, channel_id, persona_id, parent_channel_id, "
        "persona_lineage_id, summary, categories, messages, turns_since_refresh, "
        "last_refreshed_turn, updated_at_ms, rev, created_at_ms FROM stm_memories "
        "WHERE server_id = ? ORDER BY scope_kind, channel_id")
REVISIONS = ("SELECT m.scope_kind, m.channel_id, r.rev, r.summary, r.categories, r.author, "
             "r.actor, r.restored_from, r.written_at_ms FROM stm_memory_revisions r "
             "JOIN stm_memories m ON m.id = r.memory_id WHERE m.server_id = ? "
             "ORDER BY m.scope_kind, m.channel_id, r.rev")


def _contents(path: Path, server: str) -> tuple[list[Any], list[Any]]:
    conn = sqlite3.connect(path)
    try:
        return (conn.execute(ROWS, (server,)).fetchall(),
                conn.execute(REVISIONS, (server,)).fetchall())
    finally:
        conn.close()


async def test_the_floor_writes_what_stm_writes(tmp_path: Path) -> None:
    load = Workload(channels=CHANNELS).prepare(CHANNELS)
    turns = load.fresh_turns(CALLS)
    summaries = [w.summary_text(k) for k in range(CALLS)]
    clock = ManualClock(w.EPOCH_MS)
    writer = await thread_writer(tmp_path / "floor.db", clock)
    floor = await thread_tool_writer(tmp_path / "floor.db", clock)
    try:
        async with open_bench_store(sqlite_url(tmp_path / "stm.db"), clock) as stm:
            # The floors' set-up turn moved the clock; turn i is at i seconds again.
            clock.set(w.EPOCH_MS - 1)
            for i in range(CHANNELS):  # rows with messages, as the bench's are
                await stm_record(stm, clock, load)(i)
                await raw_record(writer, load)(i)
            for i in range(CALLS):
                now = w.EPOCH_MS + (CHANNELS + i) * 1000
                clock.set(now)
                result = await stm.apply_tool_call(turns[i], {"summary": summaries[i]})
                assert result.ok, result.message
                rows = await floor.write_summary(load.server, load.channel(i), w.USER_ID,
                                                 summaries[i], now)
                assert [r[floor.columns.index("summary")] for r in rows] == [summaries[i]] * 2
    finally:
        await writer.close()
        await floor.close()
    stm_rows, stm_revisions = _contents(tmp_path / "stm.db", load.server)
    floor_rows, floor_revisions = _contents(tmp_path / "floor.db", load.server)
    assert len(stm_rows) == 2 * CHANNELS and stm_rows == floor_rows
    assert stm_revisions == floor_revisions
    # The trim ran: each row keeps its newest revisions only.
    assert len(stm_revisions) == 2 * CHANNELS * 11
