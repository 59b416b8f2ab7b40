"""A server's newest rows, a bounded number (:class:`~stm_core.storage.records.NewestRows`),
from any adapter: read by the adapter's :class:`~stm_core.storage.protocol.BoundedReads`
when it has them, else cut from its whole load window here (the rule both
must answer by, and the in-memory adapter's way of answering)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from stm_core.storage.protocol import BoundedReads, StorageAdapter
from stm_core.storage.records import MemoryRecord, NewestRows, newest_first_order


async def newest_server_rows(adapter: StorageAdapter, reads: Sequence[NewestRows]
                             ) -> list[list[MemoryRecord]]:
    """Each read's rows, newest first. An adapter without bounded reads
    reads each server's load window once (the widest the reads ask for)."""
    if not reads:
        return []
    if isinstance(adapter, BoundedReads):
        return await adapter.newest_server_memories(reads)
    windows: dict[str, list[MemoryRecord]] = {}
    for server_id in dict.fromkeys(r.server_id for r in reads):
        since = min(r.updated_since_ms for r in reads if r.server_id == server_id)
        windows[server_id] = await adapter.load_server_memories(server_id,
                                                                updated_since_ms=since)
    return [newest(windows[r.server_id], r) for r in reads]


def newest(rows: Iterable[MemoryRecord], read: NewestRows) -> list[MemoryRecord]:
    """The rows of ``rows`` that ``read`` returns, newest first."""
    return heapq.nlargest(read.limit, filter(read.takes, rows), key=newest_first_order)
