"""1,000 concurrent writers on one channel, from several processes.

Every writer records a turn on the same persona row (the cadence counter
must count every turn exactly once: the values the writers got back are
exactly 1..1000) and applies a tool call as a persona of its own (every one
must be stored). Nobody sees "database is locked" or any other error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import open_store

from .procs import shards
from .support import add_figure

SERVER = "guild"
CHANNEL = "busy"
PROCESSES = 4
WRITERS = 1000


async def test_a_thousand_concurrent_writers_lose_nothing(
        db_url: str, figures: dict[str, Any]) -> None:
    url = db_url
    backend = "sqlite" if url.startswith("sqlite") else "postgres"
    async with open_store(url, load_entrypoints=False):
        pass  # create the schema once, before the processes race
    each = WRITERS // PROCESSES
    async with shards(url, PROCESSES) as procs:
        for n, proc in enumerate(procs):
            proc.send(op="hammer", server=SERVER, channel=CHANNEL, writers=each, tag=f"p{n}")
        answers = await asyncio.gather(*(p.expect("hammered", timeout=300) for p in procs))

    assert [a["errors"] for a in answers] == [[]] * PROCESSES
    assert [a["tool_failures"] for a in answers] == [[]] * PROCESSES
    counters = sorted(c for a in answers for c in a["counters"])
    assert counters == list(range(1, WRITERS + 1)), "a counter increment was lost or doubled"

    async with open_store(url, load_entrypoints=False) as stm:
        shared = await stm.adapter.get_memory(MemoryKey.server(SERVER, CHANNEL, "shared"))
        rows = await stm.adapter.list_memories(MemoryFilter(channel_id=CHANNEL))
    assert shared is not None and shared.turns_since_refresh == WRITERS
    notes = {r.summary for r in rows if r.key.persona_id.startswith("w-")}
    expected = {f"note p{n}-{i}" for n in range(PROCESSES) for i in range(each)}
    assert notes == expected, f"{len(expected - notes)} tool writes lost"
    # Each tool call wrote the server row and the user's copy.
    assert sum(1 for r in rows if r.key.persona_id.startswith("w-")) == 2 * WRITERS
    add_figure(figures, f"concurrent_writers_{backend}", WRITERS)
    add_figure(figures, "writes_lost", 0)
