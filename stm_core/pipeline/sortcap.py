"""Stage 6, sort and cap: newest first, at most ``max_other_channels``.

The candidates already come newest first (the cached views keep recency
order), so the cap is a walk that stops at the last slot. It runs after
visibility, so hidden rows never use up a slot (reference §7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stm_core.storage.records import MemoryRecord


def first_visible(newest_first: Iterable[MemoryRecord],
                  visible: Callable[[MemoryRecord], bool] | None,
                  cap: int, shown: Callable[[MemoryRecord], bool] | None = None
                  ) -> list[MemoryRecord]:
    """The first ``cap`` rows that ``shown`` (expiry, when given) and
    ``visible`` both keep; one loop, so no generator layer per filter."""
    kept: list[MemoryRecord] = []
    if cap <= 0:
        return kept
    for r in newest_first:
        if (shown is None or shown(r)) and (visible is None or visible(r)):
            kept.append(r)
            if len(kept) == cap:
                break
    return kept
