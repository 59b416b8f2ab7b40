"""After a restart, the first build in a big server reads a bounded number of
rows: the newest of the server's view and of the build's scope, by index,
not the server's whole load window. Counted in rows the adapter hands over,
on SQLite and PostgreSQL; the answer is the one a store reading every row of
the window gives."""

from __future__ import annotations

from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.engine.cache import place
from stm_core.engine.core import COLD_VIEW_ROWS
from stm_core.models import CrudeMessage, Turn
from stm_core.pipeline.recent import SCOPE_ROWS
from stm_core.settings import Settings
from stm_core.storage.protocol import BoundedReads
from stm_core.storage.records import (
    CaptureWrite,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    newest_first_order,
)
from stm_core.store import Stm, open_store

from .helpers import NOW

GUILD = "g1"
#: Rows of the big server, one a second back from now (all in the load window).
ROWS = 6_000
#: Rows one cold build may read: the view's, the scope's (each one more than
#: it keeps) and the build's own channel's row by its key.
BOUND = (COLD_VIEW_ROWS + 1) + (SCOPE_ROWS + 1) + 1


class RowsRead:
    """An adapter that counts the memory rows its reads hand over."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.rows = 0

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        async def counted(*args: Any, **kwargs: Any) -> Any:
            result = await target(*args, **kwargs)
            self.rows += _rows_in(result)
            return result
        return counted


class WholeWindows(RowsRead):
    """The same adapter without bounded reads: the store reads whole windows."""

    def __getattr__(self, name: str) -> Any:
        if name == "newest_server_memories":
            raise AttributeError(name)
        return super().__getattr__(name)


def _rows_in(value: object) -> int:
    if isinstance(value, MemoryRecord):
        return 1
    if isinstance(value, list | tuple):
        return sum(map(_rows_in, value))
    return 0


def _turn(channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=GUILD, persona_id="p",
                persona_lineage_id="L1", bot_name="Bot", triggerer_name="Ann",
                provider="openai", has_tools=True)


async def _seed(stm: Stm) -> None:
    """Rows of two lineages at spread times; every fifth with a summary."""
    adapter = stm.adapter
    for start in range(0, ROWS, 200):
        captures, summaries = [], []
        for n in range(start, start + 200):
            key = MemoryKey.server(GUILD, f"c{n}", "p")
            at = NOW - 1_000 * (n + 1)
            lineage = "L2" if n % 7 == 3 else "L1"
            captures.append(CaptureWrite(key=key, now_ms=at, persona_lineage_id=lineage,
                                         messages=(CrudeMessage(role="user", content=f"line {n}",
                                                                speaker_name="Ann",
                                                                timestamp_ms=at),)))
            if n % 5 == 0:
                summaries.append(MemoryWrite(key=key, now_ms=at, set_summary=True,
                                             summary=f"summary of c{n}"))
        await adapter.capture(captures)
        await adapter.write_memory(summaries)


async def _cold_build(url: str, proxy: type[RowsRead], channel: str) -> tuple[object, int]:
    async with open_store(url, settings=Settings(), clock=ManualClock(NOW),
                          load_entrypoints=False, listen_for_changes=False) as stm:
        counter = proxy(stm.adapter)
        stm.adapter = counter  # type: ignore[assignment]
        context = await stm.build_context(_turn(channel))
        return context, counter.rows


async def test_a_first_build_in_a_big_server_reads_a_bounded_number_of_rows(
        db_url: str) -> None:
    async with open_store(db_url, settings=Settings(), clock=ManualClock(NOW),
                          load_entrypoints=False, listen_for_changes=False) as stm:
        assert isinstance(stm.adapter, BoundedReads)
        await _seed(stm)
    for channel in ("c0", "c2", "c3", "new"):
        bounded, rows = await _cold_build(db_url, RowsRead, channel)
        whole, all_rows = await _cold_build(db_url, WholeWindows, channel)
        assert rows <= BOUND < ROWS, (channel, rows)
        assert all_rows >= ROWS  # what a cold build read before
        assert bounded == whole, channel
        assert bounded.memory_items, channel  # type: ignore[attr-defined]


def test_a_bounded_read_orders_rows_as_every_cached_view_does() -> None:
    """The view a bounded read fills is the one the whole window would give
    only if both orders agree, ties included (rows of one time stand by
    their keys' fields, in code point order)."""
    rows = [MemoryRecord(key=MemoryKey.server(server, channel, persona), updated_at_ms=at)
            for server in ("g1", "G1", "g\u00e9")
            for channel in ("a", "B", "b", "10", "9", "\u00e9", "c_1", "c-1")
            for persona in (None, "p", "P")
            for at in (NOW, NOW - 1)]
    rows += [MemoryRecord(key=MemoryKey.user(user, "a", None, server), updated_at_ms=NOW)
             for user in ("u", "U") for server in ("g1", None)]
    assert sorted(rows, key=place) == sorted(rows, key=newest_first_order)
    assert sorted(rows, key=place) != sorted(rows, key=lambda r: r.updated_at_ms)
