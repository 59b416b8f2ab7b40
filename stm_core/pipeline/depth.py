"""Stage 9, depth: where the content block goes (reference §6).

A block whose newest rendered memory is at most the fresh window old is
pulled to the fresh depth. That depth is a ceiling: it only ever moves the
block closer to the dialogue. ``-1`` (anchored at the top) is a sentinel, not a
depth, so a fresh block replaces it outright.
"""

from __future__ import annotations


def resolve_memory_depth(configured: int, newest_ms: int | None, now_ms: int, *,
                         window_ms: int, fresh_depth: int) -> int:
    """``newest_ms`` is the newest ``updated_at`` among the rendered memories,
    or ``None`` when nothing was rendered (never fresh)."""
    if newest_ms is None or now_ms - newest_ms > window_ms:
        return configured
    return fresh_depth if configured < 0 else min(fresh_depth, configured)
