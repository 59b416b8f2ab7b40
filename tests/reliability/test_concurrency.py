"""1,000 concurrent writers on one channel, from several processes.

Every writer records a turn on the same persona row (the cadence counter
must count every turn exactly once: the values the writers got back are
exactly 1..1000) and applies a tool call as a persona of its own (every one
must be stored). Nobody sees "database is locked" or any other error.

The same again with each process writing one turn at a time: on SQLite each
write then tries to run inline (on the event loop's thread) and meets the
other processes' write locks on its own.
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
    answers = await _hammer(db_url, sequential=False)
    await _nothing_lost(db_url, answers, figures)


async def test_processes_writing_one_turn_at_a_time_lose_nothing(
        db_url: str, figures: dict[str, Any]) -> None:
    answers = await _hammer(db_url, sequential=True)
    if db_url.startswith("sqlite"):
        stats = [a["writer"] for a in answers]
        # Most writes ran inline; those that met another process's lock
        # waited for it on the writer thread.
        assert sum(s["inline_jobs"] for s in stats) > WRITERS
        assert sum(s["jobs"] for s in stats) > 0
    await _nothing_lost(db_url, answers, figures)


async def _hammer(url: str, *, sequential: bool) -> list[dict[str, Any]]:
    async with open_store(url, load_entrypoints=False):
        pass  # create the schema once, before the processes race
    each = WRITERS // PROCESSES
    async with shards(url, PROCESSES) as procs:
        for n, proc in enumerate(procs):
            proc.send(op="hammer", server=SERVER, channel=CHANNEL, writers=each, tag=f"p{n}",
                      sequential=sequential)
        return await asyncio.gather(*(p.expect("hammered", timeout=300) for p in procs))


async def _nothing_lost(url: str, answers: list[dict[str, Any]],
                        figures: dict[str, Any]) -> None:
    backend = "sqlite" if url.startswith("sqlite") else "postgres"
    each = WRITERS // PROCESSES
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
