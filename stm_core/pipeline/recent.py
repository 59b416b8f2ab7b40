"""Stages 2 to 6 as one walk over the newest rows: the candidates a build shows.

gather -> crossserver -> expiry -> visibility -> sortcap keep their rules
(one module each); this module only orders the work. The current server's
rows come lazily, newest first, from its cached view, and the walk ends once
``max_other_channels`` rows passed every filter: a warm build touches the few
rows it may show, not every channel of the server. Folded and DM rows (one
user's, few) are filtered up front, so the settings of every server they come
from are loaded before any policy runs, as before.

A view keeps only its newest rows (``cache_max_rows_per_view``), in one
order (time, then key), so every row it dropped stands below every row it
kept. Once a server's view has dropped rows that have not expired, the walk
takes the view's rows for the build's scope instead
(:class:`~stm_core.engine.cache.ScopedRows`: the turn's persona lineage, without the
channels its visibility policies declare hidden, without rows that expired):
read by the engine when a build first asks for them (one read for
concurrent builds), then kept in step with every write. A build may walk a
kept scope of its lineage that hides fewer channels (its policies pass the
rest by), so users with channels of their own hidden share one. So neither
another lineage's rows, nor private channels', nor expired ones stand in the
way of a warm build. When the walk cannot tell it is exact, the scope is
read deeper, up to ``SCOPE_DEPTH`` views' worth of rows (policies that hide
without declaring); when rows dropped could still have made the cut
(:func:`exact`), the walk runs again over the rows read from the database:
the answer is always the one an unbounded cache would give.

A build first asks :func:`cached_visible`, the walk when the cache holds
everything it needs (the usual turn): no coroutine, no read. When it does
not (an origin server's settings, a scope not read yet, rows a view dropped
that could show), the build awaits :func:`newest_visible`, which reads them
and runs the same helpers.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

import attrs

from hookspecs.types import VisibilityContext, VisibilityPolicy, hidden_channels
from stm_core.engine.cache import MemoryView, Scope, ScopedRows, UserView, place
from stm_core.models import Turn
from stm_core.pipeline.crossserver import folded_rows
from stm_core.pipeline.expiry import drop_expired
from stm_core.pipeline.gather import dm_candidates
from stm_core.pipeline.load import Loaded
from stm_core.pipeline.sortcap import first_visible
from stm_core.pipeline.visibility import (
    cached_origin_settings,
    origin_settings,
    visibility_context,
)
from stm_core.settings import Settings
from stm_core.storage.records import MemoryRecord, ServerSettings

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

_UPDATED_AT = attrgetter("updated_at_ms")

#: Where a stream's rows stand among rows of equal time in the walk: the
#: server's own before folded ones (``heapq.merge`` is stable, own first).
OWN, FOLDED = 1, 0

#: Rows a scope keeps (half with a summary, half without), unless the cap
#: asks for more or the view's bound is smaller: enough for the rows shown,
#: the turn's own channel's and rows hidden by policies that do not declare
#: them; the view keeps many scopes of this size for about the rows of one.
SCOPE_ROWS = 128
#: A scope's rows grow to at most this many times its view's bound, while a
#: build cannot tell its walk is exact (policies hiding rows they do not
#: declare): the walk stays bounded.
SCOPE_DEPTH = 4


#: Stages 2 to 6's answer: the other-channel rows to show, newest first,
#: and the settings of every server they come from.
Visible = tuple[list[MemoryRecord], dict[str, ServerSettings]]


def cached_visible(engine: Engine, turn: Turn, loaded: Loaded,
                   policies: Sequence[VisibilityPolicy]) -> Visible | None:
    """:func:`newest_visible` when the cache answers it alone (no read, no
    coroutine): every origin server's settings are at hand, the scope the
    walk needs is cached, and no row a view dropped could show. Else
    ``None``: the caller awaits :func:`newest_visible`. The usual turn."""
    few = _few(engine, turn, loaded)
    profile = loaded.profile
    servers = cached_origin_settings(turn, profile, few)
    if servers is None:
        return None
    ctx = visibility_context(turn, profile, loaded.opt_in, servers)
    server = loaded.server
    # Most views dropped no row: no scope to walk, and nothing the walk could miss.
    complete = server is not None and server.dropped_through is None
    scoped = None
    if not complete and server is not None and _may_miss(server, loaded.now_ms, engine.settings):
        scoped = engine.cached_scope(server, _scope(turn, policies, ctx))
        if scoped is None:
            return None
    shown = _walk(engine, loaded, few, ctx, policies, scoped)
    if complete and not loaded.opt_in:
        return shown, servers
    users_exact, own_exact = _exact(engine, loaded, shown, scoped)
    return (shown, servers) if users_exact and own_exact else None


async def newest_visible(engine: Engine, turn: Turn, loaded: Loaded,
                         policies: Sequence[VisibilityPolicy]) -> Visible:
    """The other-channel rows to show, newest first, and the origin servers'
    settings, with the reads that make the answer the one an unbounded cache
    gives (a build first asks :func:`cached_visible`)."""
    few, servers, ctx = await _candidates(engine, turn, loaded)
    server = loaded.server
    scoped = None
    if server is not None and _may_miss(server, loaded.now_ms, engine.settings):
        shown, scoped = await _walk_scoped(engine, turn, loaded, few, ctx, policies, server,
                                           _scope(turn, policies, ctx))
    else:
        shown = _walk(engine, loaded, few, ctx, policies, None)
    users_exact, own_exact = _exact(engine, loaded, shown, scoped)
    if users_exact and own_exact:
        return shown, servers
    unbounded = await _unbounded(engine, turn, loaded, users=not users_exact,
                                 own=not own_exact)
    few, servers, ctx = await _candidates(engine, turn, unbounded)
    return _walk(engine, unbounded, few, ctx, policies, scoped if own_exact else None), servers


async def _walk_scoped(engine: Engine, turn: Turn, loaded: Loaded, few: list[MemoryRecord],
                       ctx: VisibilityContext, policies: Sequence[VisibilityPolicy],
                       server: MemoryView, scope: Scope
                       ) -> tuple[list[MemoryRecord], ScopedRows]:
    """The walk over the rows kept for ``scope`` (or for a scope of its
    lineage hiding fewer channels), reading them when none are kept, and
    again when the walk cannot tell its answer is exact: first the rows of
    ``scope`` itself, then deeper ones, up to ``SCOPE_DEPTH`` views' worth.
    A first read for a lineage whose scopes hide other channels reads the
    scope hiding only the channels both hide, so builds of users with hidden
    channels of their own share it."""
    env = engine.settings
    deepest = SCOPE_DEPTH * server.max_rows
    scoped = engine.cached_scope(server, scope)
    if scoped is None:
        lineage, hidden = scope
        kept = server.hidden_kept(lineage)
        shared = (lineage, hidden & kept[-1]) if kept else scope
        first = min(server.max_rows, max(SCOPE_ROWS, 8 * env.max_other_channels))
        scoped = await _read_scope(engine, turn, loaded, server, shared, first)
    while True:
        shown = _walk(engine, loaded, few, ctx, policies, scoped)
        if _own_exact(server, scoped, shown, loaded.now_ms, env):
            return shown, scoped
        if scoped.hidden != scope[1]:
            scoped = await _read_scope(engine, turn, loaded, server, scope, scoped.max_rows)
        elif scoped.max_rows < deepest:
            scoped = await _read_scope(engine, turn, loaded, server, scope,
                                       min(deepest, 4 * scoped.max_rows))
        else:
            return shown, scoped


async def _read_scope(engine: Engine, turn: Turn, loaded: Loaded, server: MemoryView,
                      scope: Scope, max_rows: int) -> ScopedRows:
    assert turn.server_id is not None
    return await engine.scope_rows(turn.server_id, server, scope, now_ms=loaded.now_ms,
                                   max_rows=max_rows)


def _exact(engine: Engine, loaded: Loaded, shown: list[MemoryRecord], scoped: ScopedRows | None
           ) -> tuple[bool, bool]:
    """Whether no row the user's view, and the server's view (or the scope
    walked), dropped could be among ``shown``."""
    server = loaded.server
    env = engine.settings
    users_exact = ((server is not None and not loaded.opt_in)
                   or exact(loaded.user.memories, shown, env.max_other_channels, FOLDED,
                            since_ms=loaded.now_ms - env.longest_ttl_ms))
    own_exact = server is None or _own_exact(server, scoped, shown, loaded.now_ms, env)
    return users_exact, own_exact


def _scope(turn: Turn, policies: Sequence[VisibilityPolicy], ctx: VisibilityContext
           ) -> Scope:
    return (turn.persona_lineage_id or None, hidden_channels(policies, ctx))


def _own_exact(server: MemoryView, scoped: ScopedRows | None, shown: list[MemoryRecord],
               now_ms: int, env: Settings) -> bool:
    """No row the server's view, or the scope walked, dropped could be among ``shown``."""
    cap = env.max_other_channels
    if scoped is None:
        return exact(server, shown, cap, OWN, since_ms=now_ms - env.longest_ttl_ms)
    return scoped_exact(scoped, shown, cap, now_ms, env)


def exact(view: MemoryView, shown: list[MemoryRecord], cap: int, rank: int, *,
          since_ms: int) -> bool:
    """No row ``view`` dropped could be among ``shown`` (the first ``cap``
    rows of a walk in which the view's rows stand at ``rank``): it dropped
    none, only rows updated before ``since_ms`` (expired), or the last row
    shown comes before every row it dropped."""
    dropped = view.dropped_through
    if dropped is None or cap <= 0 or dropped[0] < since_ms:
        return True
    if len(shown) < cap:
        return False
    last = shown[-1]
    at, key = place(last)
    return (at, OWN if last.key.scope_kind == "server" else FOLDED, key) > (
        dropped[0], rank, dropped[1])


def scoped_exact(scoped: ScopedRows, shown: list[MemoryRecord], cap: int, now_ms: int,
                 env: Settings) -> bool:
    """:func:`exact` for both halves of ``scoped``, and none of the rows it
    left out could show at ``now_ms``."""
    crude_since = now_ms - env.crude_ttl_ms
    return (crude_since >= scoped.crude_since_ms
            and exact(scoped.summaries, shown, cap, OWN,
                      since_ms=now_ms - env.summary_ttl_ms)
            and exact(scoped.crude, shown, cap, OWN, since_ms=crude_since))


def _may_miss(view: MemoryView, now_ms: int, env: Settings) -> bool:
    """``view`` dropped rows that may not have expired yet."""
    dropped = view.dropped_through
    return dropped is not None and dropped[0] >= now_ms - env.longest_ttl_ms


async def _unbounded(engine: Engine, turn: Turn, loaded: Loaded, *, users: bool,
                     own: bool) -> Loaded:
    """``loaded`` with every row of the load window of the user's view
    (``users``) and of the server's view (``own``), read from the database
    (not cached: the cache keeps its bound)."""
    since = loaded.now_ms - engine.settings.longest_ttl_ms
    adapter = engine.adapter
    user, server = loaded.user, loaded.server
    if users:
        rows = await adapter.load_user_memories(user.prefs.user_id, updated_since_ms=since)
        user = UserView(prefs=user.prefs, memories=_all(rows))
    if own and turn.server_id is not None:
        server = _all(await adapter.load_server_memories(turn.server_id,
                                                         updated_since_ms=since))
    return attrs.evolve(loaded, user=user, server=server)


def _all(rows: list[MemoryRecord]) -> MemoryView:
    return MemoryView(rows, max_rows=max(1, len(rows)))


def _few(engine: Engine, turn: Turn, loaded: Loaded) -> list[MemoryRecord]:
    """The folded or DM rows, filtered up front (gather, crossserver, expiry)."""
    few = folded_rows(turn, loaded) if loaded.server is not None else dm_candidates(turn, loaded)
    if few:  # none on the usual guild turn
        env = engine.settings
        few = drop_expired(few, loaded.now_ms, crude_ttl_ms=env.crude_ttl_ms,
                           summary_ttl_ms=env.summary_ttl_ms)
    return few


async def _candidates(engine: Engine, turn: Turn, loaded: Loaded
                      ) -> tuple[list[MemoryRecord], dict[str, ServerSettings],
                                 VisibilityContext]:
    """The folded or DM rows (filtered up front), the settings of every
    server they come from, and the policies' context."""
    few = _few(engine, turn, loaded)
    servers = await origin_settings(engine, turn, loaded.profile, few)
    return few, servers, visibility_context(turn, loaded.profile, loaded.opt_in, servers)


def _walk(engine: Engine, loaded: Loaded, few: list[MemoryRecord], ctx: VisibilityContext,
          policies: Sequence[VisibilityPolicy], scoped: ScopedRows | None
          ) -> list[MemoryRecord]:
    env = engine.settings
    now, crude_ttl, summary_ttl = loaded.now_ms, env.crude_ttl_ms, env.summary_ttl_ms
    server = loaded.server
    rows: Iterable[MemoryRecord] = few
    if server is not None:
        own: Iterator[MemoryRecord] = (
            server.newest_first() if scoped is None
            else scoped.newest_first(summary_since_ms=now - summary_ttl,
                                     crude_since_ms=now - crude_ttl))
        # Equal times: the server's own rows before folded ones (merge is
        # stable). The usual guild turn has no folded rows: no merge.
        rows = heapq.merge(own, few, key=_UPDATED_AT, reverse=True) if few else own
    return first_visible(rows, ctx.turn, policies, ctx, env.max_other_channels, now_ms=now,
                         crude_ttl_ms=crude_ttl, summary_ttl_ms=summary_ttl)
