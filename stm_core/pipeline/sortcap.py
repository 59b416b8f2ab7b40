"""Stage 6, sort and cap: newest first, at most ``max_other_channels``.

The candidates already come newest first (the cached views keep recency
order), so the cap is a walk that stops at the last slot. It runs after
visibility, so hidden rows never use up a slot (reference §7.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hookspecs.types import VisibilityContext, VisibilityPolicy
from stm_core.models import Turn
from stm_core.storage.records import MemoryRecord


def first_visible(newest_first: Iterable[MemoryRecord], turn: Turn,
                  policies: Sequence[VisibilityPolicy], ctx: VisibilityContext,
                  cap: int, *, now_ms: int, crude_ttl_ms: int,
                  summary_ttl_ms: int) -> list[MemoryRecord]:
    """The first ``cap`` rows that are candidates of ``turn`` (another channel,
    the turn's persona lineage: ``gather``'s rule), not expired
    (:func:`~stm_core.pipeline.expiry.is_shown`) and visible: no policy
    answers ``False`` for them with ``ctx``. Every build walks this, so it is
    one loop with the rules written out inline, no generator or call per row
    for them but the policies' own; a property test keeps it equal to the
    rules. Folded and DM rows come already filtered by both and pass again
    (a few rows at most)."""
    kept: list[MemoryRecord] = []
    if cap <= 0:
        return kept
    channel, lineage = turn.channel_id, turn.persona_lineage_id
    summary_since, crude_since = now_ms - summary_ttl_ms, now_ms - crude_ttl_ms
    for r in newest_first:
        if r.key.channel_id == channel or (lineage and r.persona_lineage_id != lineage):
            continue
        if r.summary:  # content, and the summary's TTL
            if r.updated_at_ms < summary_since:
                continue
        elif r.updated_at_ms < crude_since or not (
                r.messages or any(v.strip() for v in r.categories.values())):
            continue
        for policy in policies:
            if policy(r, ctx) is False:
                break
        else:
            kept.append(r)
            if len(kept) == cap:
                break
    return kept
