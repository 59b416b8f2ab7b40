"""Stage 4, expiry: drop candidates that expired or have nothing to show.

Expiry is computed from stored fields only, so a restart gives the same answer
(DESIGN decision 4). A row with no summary, no category text and no messages
renders nothing (decision 1), so it must not take one of the capped slots.
Runs before visibility, which may need to load the settings of a row's server.
"""

from __future__ import annotations

from stm_core.pipeline.memory_ttl import is_expired
from stm_core.storage.records import MemoryRecord


def has_content(record: MemoryRecord) -> bool:
    """A summary, a non-blank category value, or at least one raw message."""
    return bool(record.summary or record.messages
                or any(v.strip() for v in record.categories.values()))


def is_shown(record: MemoryRecord, now_ms: int, *, crude_ttl_ms: int,
             summary_ttl_ms: int) -> bool:
    """Not expired, and something to render."""
    return has_content(record) and not is_expired(record, now_ms, crude_ttl_ms=crude_ttl_ms,
                                                  summary_ttl_ms=summary_ttl_ms)


def drop_expired(candidates: list[MemoryRecord], now_ms: int, *, crude_ttl_ms: int,
                 summary_ttl_ms: int) -> list[MemoryRecord]:
    return [r for r in candidates
            if is_shown(r, now_ms, crude_ttl_ms=crude_ttl_ms, summary_ttl_ms=summary_ttl_ms)]
