"""Stages 9 and 11: what a build shows, as the context at its depths.

The build ends here: the items in their order (other channels, then the same
channel), the nudge, and the depths under the server's cache policy
(``cache_policy``): a block whose newest memory is fresh moves closer to the
dialogue (``depth``).
"""

from __future__ import annotations

from stm_core.engine.profile import ServerProfile
from stm_core.models import ContextItem, StmContext
from stm_core.pipeline.cache_policy import base_memory_depth, nudge_depth
from stm_core.pipeline.depth import resolve_memory_depth
from stm_core.pipeline.results import context_item, stm_context
from stm_core.settings import Settings
from stm_core.storage.records import MemoryRecord


def finished_context(profile: ServerProfile, env: Settings, now_ms: int, *,
                     other: str | None, same: str | None, nudge: str | None,
                     newest_other_ms: int | None, live: MemoryRecord | None,
                     has_tools: bool) -> StmContext:
    """The context of the texts a build emits (``other``, ``same``: shown when
    not empty; ``nudge``: an item whenever given), ``newest_other_ms`` being the
    newest other-channel memory shown and ``live`` the live row while it has
    not expired."""
    items: tuple[ContextItem, ...]
    if other:
        other_item = context_item(other, "other_channels")
        items = (other_item, context_item(same, "same_channel")) if same else (other_item,)
    else:
        items = (context_item(same, "same_channel"),) if same else ()
    nudge_item = None if nudge is None else context_item(nudge, "nudge")
    depth = base_memory_depth(profile)
    if has_tools:
        newest = newest_other_ms
        # The live row counts even when it holds raw lines only: every bot turn
        # refreshes it, so freshness tracks the last turn the bot took part in.
        if live is not None:
            newest = max(newest or 0, live.updated_at_ms)
        # Freshness is only computed inside the tools branch (reference §6), and
        # only matters when there is a block to move; a stable block never moves.
        if items and not profile.stable:
            depth = resolve_memory_depth(depth, newest, now_ms, window_ms=env.fresh_window_ms,
                                         fresh_depth=env.fresh_injection_depth)
    return stm_context(items, nudge_item, nudge_depth(profile), depth, profile.cache_policy)
