"""Stage 6, sort and cap: newest first, at most ``max_other_channels``.

Runs after visibility, so hidden rows never use up a slot (reference §7.2).
"""

from __future__ import annotations

from operator import attrgetter

from stm_core.storage.records import MemoryRecord

_UPDATED_AT = attrgetter("updated_at_ms")


def sort_and_cap(entries: list[MemoryRecord], cap: int) -> list[MemoryRecord]:
    if len(entries) > 1:
        entries.sort(key=_UPDATED_AT, reverse=True)
    return entries[:cap]
