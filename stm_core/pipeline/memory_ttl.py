"""When a stored memory has expired. Computed from persisted fields only, so the
answer is the same before and after a restart (DESIGN decision 4).
"""

from __future__ import annotations

from stm_core.storage.records import MemoryRecord


def is_expired(record: MemoryRecord, now_ms: int, *, crude_ttl_ms: int,
               summary_ttl_ms: int) -> bool:
    """Strictly older than its TTL: 24 h with a summary, 12 h otherwise
    (category-only entries use the 12 h TTL, as upstream)."""
    ttl = summary_ttl_ms if record.summary else crude_ttl_ms
    return now_ms - record.updated_at_ms > ttl
