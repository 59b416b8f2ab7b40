"""Stages 2 to 6 as one walk over the newest rows: the candidates a build shows.

gather -> crossserver -> expiry -> visibility -> sortcap keep their rules
(one module each); this module only orders the work. The current server's
rows come lazily, newest first, from its cached view, and the walk ends once
``max_other_channels`` rows passed every filter: a warm build touches the few
rows it may show, not every channel of the server. Folded and DM rows (one
user's, few) are filtered up front, so the settings of every server they come
from are loaded before any policy runs, as before.

A view keeps only its newest rows (``cache_max_rows_per_view``). When the
rows it dropped could have made the cut (fewer visible rows than the cap, or
the last one shown no newer than the newest row dropped), the walk runs again
over the full rows loaded from the database: the answer is always the one an
unbounded cache would give.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from operator import attrgetter
from typing import TYPE_CHECKING

import attrs

from stm_core.cache import MemoryView, UserView
from stm_core.models import Turn
from stm_core.pipeline.crossserver import folded_rows
from stm_core.pipeline.expiry import drop_expired
from stm_core.pipeline.gather import dm_candidates
from stm_core.pipeline.load import Loaded
from stm_core.pipeline.sortcap import first_visible
from stm_core.pipeline.visibility import (
    current_settings,
    origin_settings,
    visibility_context,
)
from stm_core.storage.records import MemoryRecord, ServerSettings

if TYPE_CHECKING:
    from stm_core.store import Stm

_UPDATED_AT = attrgetter("updated_at_ms")


async def newest_visible(stm: Stm, turn: Turn, loaded: Loaded
                         ) -> tuple[list[MemoryRecord], dict[str, ServerSettings]]:
    """The other-channel rows to show, newest first, and the origin servers' settings."""
    shown, servers = await _walk(stm, turn, loaded)
    cap = stm.settings.max_other_channels
    views = [loaded.user.memories] if loaded.server is None or loaded.opt_in else []
    if loaded.server is not None:
        views.append(loaded.server)
    for view in views:
        if not _exact(view, shown, cap):
            return await _walk(stm, turn, await _unbounded(stm, turn, loaded))
    return shown, servers


def _exact(view: MemoryView, shown: list[MemoryRecord], cap: int) -> bool:
    """No row the view dropped could be among ``shown``."""
    dropped = view.dropped_through_ms
    return dropped is None or cap <= 0 or (len(shown) == cap
                                            and shown[-1].updated_at_ms > dropped)


async def _unbounded(stm: Stm, turn: Turn, loaded: Loaded) -> Loaded:
    """``loaded`` with every row of the load window, read from the database
    (not cached: the cache keeps its bound)."""
    since = loaded.now_ms - stm.settings.longest_ttl_ms
    adapter = stm.adapter
    user_id = loaded.user.prefs.user_id
    user_rows = await adapter.load_user_memories(user_id, updated_since_ms=since)
    user = UserView(prefs=loaded.user.prefs, memories=_all(user_rows))
    server = None
    if turn.server_id is not None:
        server = _all(await adapter.load_server_memories(turn.server_id,
                                                         updated_since_ms=since))
    return attrs.evolve(loaded, user=user, server=server)


def _all(rows: list[MemoryRecord]) -> MemoryView:
    return MemoryView(rows, max_rows=max(1, len(rows)))


async def _walk(stm: Stm, turn: Turn, loaded: Loaded
                ) -> tuple[list[MemoryRecord], dict[str, ServerSettings]]:
    env = stm.settings
    now, crude_ttl, summary_ttl = loaded.now_ms, env.crude_ttl_ms, env.summary_ttl_ms
    server = loaded.server
    few = folded_rows(turn, loaded) if server is not None else dm_candidates(turn, loaded)
    # No folded or DM rows (the usual guild turn): no other server's settings.
    if few:
        few = drop_expired(few, now, crude_ttl_ms=crude_ttl, summary_ttl_ms=summary_ttl)
    servers = (await origin_settings(stm, turn, loaded.profile, few) if few
               else current_settings(turn, loaded.profile))
    ctx = visibility_context(turn, loaded.profile, loaded.opt_in, servers)
    rows: Iterable[MemoryRecord] = few
    if server is not None:
        # Equal times: the server's own rows before folded ones (merge is
        # stable). The usual guild turn has no folded rows: no merge.
        own = server.newest_first()
        rows = heapq.merge(own, few, key=_UPDATED_AT, reverse=True) if few else own
    return first_visible(rows, turn, stm.hooks.visibility_policies(), ctx,
                         env.max_other_channels, now_ms=now,
                         crude_ttl_ms=crude_ttl, summary_ttl_ms=summary_ttl), servers
