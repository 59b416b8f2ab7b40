"""Stage 6, sort and cap: newest first, at most ``max_other_channels``.

The candidates already come newest first (the cached views keep recency
order), so the cap is a walk that stops at the last slot. It runs after
visibility, so hidden rows never use up a slot (reference §7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stm_core.cache import MemoryView
from stm_core.models import Turn
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


def first_own_visible(view: MemoryView, turn: Turn,
                      visible: Callable[[MemoryRecord], bool] | None, cap: int, *,
                      now_ms: int, crude_ttl_ms: int, summary_ttl_ms: int) -> list[MemoryRecord]:
    """The usual guild turn's walk (the server's own rows, nothing folded in):
    ``first_visible(server_candidates(turn, view), visible, cap, shown_at(...))``
    in one loop, the candidate rule of ``gather`` and the expiry rule of
    ``expiry.shown_at`` written out inline: every build walks it, and the
    generator and the two calls per row were a tenth of a warm build. A
    property test keeps it equal to the stages it fuses."""
    kept: list[MemoryRecord] = []
    if cap <= 0:
        return kept
    channel, lineage = turn.channel_id, turn.persona_lineage_id
    summary_since, crude_since = now_ms - summary_ttl_ms, now_ms - crude_ttl_ms
    for r in view.newest_first():
        if r.key.channel_id == channel or (lineage and r.persona_lineage_id != lineage):
            continue
        if r.summary:
            if r.updated_at_ms < summary_since:
                continue
        elif r.updated_at_ms < crude_since or not (
                r.messages or any(v.strip() for v in r.categories.values())):
            continue
        if visible is None or visible(r):
            kept.append(r)
            if len(kept) == cap:
                break
    return kept
