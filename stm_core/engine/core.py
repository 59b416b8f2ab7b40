"""What every inner part of stm works on: the :class:`Engine` under ``Stm``.

The engine owns the cache, the profiles, the hooks, the clock and the
settings. It is the one home of two rules:

* **cached reads**: a warm read comes from the cache; concurrent cold reads of
  one key share one database call (:meth:`Engine._single_flight`);
* **write-through**: every write goes to the database first, the cache is
  updated only from what committed, and a write that fails drops what the
  cache held for it (it may have committed before the failure was seen).
  Every cache change carries the change mark taken before its database call
  (see :mod:`stm_core.engine.cache`), so a change that finishes late never undoes a
  newer one.

The stages, the record step, the tool, admin, the janitor and the listener
take an engine; the host's facade (:class:`stm_core.store.Stm`) sits above it.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

from stm_core._util import telemetry
from stm_core._util.clock import Clock, SystemClock
from stm_core.engine.cache import (
    LRU,
    MemoryCache,
    MemoryView,
    Scope,
    ScopedRows,
    UserView,
    place,
    scope_half,
)
from stm_core.engine.profile import ProfileCache, ServerProfile
from stm_core.models import Turn
from stm_core.plugins import StmPluginManager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.storage.complete import CompleteStorage
from stm_core.storage.protocol import (
    ReportedWrites,
    StorageAdapter,
    WriteReport,
    reports_write_outcomes,
)
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    ChangeNotice,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    NewestRows,
    ServerSettings,
    UserPrefs,
)

T = TypeVar("T")

#: What a store hears of other processes' writes (:meth:`Engine.max_view_age_ms`).
Hearing = Literal["alone", "listening", "unheard", "deaf"]

#: Reads of a scope while writes keep racing them (their order against the
#: read unknown) before a build takes what it read, uncached.
SCOPE_READS = 3
W = TypeVar("W")

#: Rows a server's view is loaded with, at most: the newest, read by index
#: (a big server is not read whole). Past them the view knows it may lack
#: rows; a build then reads the few its persona lineage may show, and a
#: channel's own row by its key.
COLD_VIEW_ROWS = 128


class Engine:
    """The cache, profiles, hooks, clock and settings of one store, with its
    cached reads and database-first writes."""

    def __init__(self, adapter: StorageAdapter, *, pm: StmPluginManager,
                 settings: Settings | None = None, clock: Clock | None = None) -> None:
        self._adapter = adapter
        self._reported: ReportedWrites | None = None
        self.adapter = adapter
        self.pm = pm
        self.hooks = Hooks(pm)
        self.settings = settings or Settings()
        self.clock: Clock = clock or SystemClock()
        self._cache = MemoryCache(max_servers=self.settings.cache_max_servers,
                                 max_users=self.settings.cache_max_users,
                                 max_rows_per_view=self.settings.cache_max_rows_per_view)
        self.profiles = ProfileCache(self.hooks, self.settings)
        # Turns whose tool call already succeeded (the once-per-turn rule).
        self._updated_turns: weakref.WeakSet[Turn] = weakref.WeakSet()
        self._inflight: dict[tuple[object, ...], asyncio.Future[Any]] = {}
        self.hearing: Hearing = "alone"
        self.set_staleness("alone")

    @property
    def adapter(self) -> StorageAdapter:
        return self._adapter

    @adapter.setter
    def adapter(self, adapter: StorageAdapter) -> None:
        self._adapter = adapter
        self._reported = (cast(ReportedWrites, adapter) if reports_write_outcomes(adapter)
                          else None)

    @property
    def cache(self) -> MemoryCache:
        """The cache, to read (its statistics, what it holds). Only the
        engine changes it (a test checks every caller of every mutator)."""
        return self._cache

    # -- once-per-turn bookkeeping ---------------------------------------------
    def tool_already_used(self, turn: Turn) -> bool:
        return turn.stm_update_disabled or turn in self._updated_turns

    def mark_tool_used(self, turn: Turn) -> None:
        self._updated_turns.add(turn)

    # -- cached reads (used by the pipeline, the tool and admin) -------------------
    async def _single_flight(self, key: tuple[object, ...],
                             load: Callable[[], Awaitable[T]]) -> T:
        """Concurrent cold reads of one key share one database call."""
        future = self._inflight.get(key)
        if future is not None:
            return cast(T, await asyncio.shield(future))
        future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await load()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved; waiters re-raise it
            raise
        else:
            future.set_result(value)
            return value
        finally:
            del self._inflight[key]

    def warm_turn_state(self, server_id: str | None, user_id: str, now_ms: int | None = None
                        ) -> tuple[ServerProfile, UserView, MemoryView | None] | None:
        """A turn's profile, user view and server view at ``now_ms`` (the
        clock's now by default) when the cache holds all of them (counted as
        hits, as the loaders below count them), else ``None`` and nothing
        counted: the loaders then read what is missing. The warm turn takes
        this path, without a coroutine per read."""
        cache = self._cache
        window = (self.clock.now_ms() if now_ms is None else now_ms) - self.settings.longest_ttl_ms
        user = cache.users.fresh(user_id)
        if user is None or not user.memories.covers(window):
            return None
        if server_id is None:
            cache.stats.hits += 1
            telemetry.counts.user_hits += 1
            return self.profiles.profile("", None), user, None
        settings = cache.settings.fresh(server_id)
        server = cache.servers.fresh(server_id) if settings is not None else None
        if server is None or not server.covers(window):
            return None
        cache.stats.hits += 3
        counts = telemetry.counts
        counts.settings_hits += 1
        counts.user_hits += 1
        counts.server_hits += 1
        return self.profiles.profile(server_id, settings), user, server

    async def _cached(self, kind: str, ident: str, lru: LRU[str, T],
                      read: Callable[[int], Awaitable[T]], install: Callable[[T, int], None],
                      usable: Callable[[T], bool] = lambda _: True) -> T:
        """The one body of the cached loaders: a usable cached value is a hit;
        else one read shared by concurrent callers (``read`` gets the change
        mark taken before it), installed by ``install`` unless views were
        dropped meanwhile (the epoch moved: what it read may be stale)."""
        cache = self._cache
        cached = lru.fresh(ident)
        if cached is not None and usable(cached):
            cache.stats.hits += 1
            _count(kind, hit=True)
            return cached

        async def load() -> T:
            cache.stats.misses += 1
            _count(kind, hit=False)
            epoch, since = cache.epoch, cache.mark()
            value = await read(since)
            if cache.epoch == epoch:
                install(value, since)
            return value

        return await self._single_flight((kind, ident), load)

    async def _read_view(self, kind: str, ident: str,
                         read: Callable[[int], Awaitable[list[MemoryRecord]]],
                         keep: int | None = None) -> MemoryView:
        """A view of the rows ``read`` returns from the load window on, with
        what commits meanwhile replayed onto it (:meth:`MemoryCache.end_load`);
        ``keep``: ``read`` returned only the newest rows (see
        :meth:`MemoryCache.new_view`)."""
        cache = self._cache
        cache.begin_load(kind, ident)
        view: MemoryView | None = None
        try:
            since = self.clock.now_ms() - self.settings.longest_ttl_ms
            view = cache.new_view(await read(since), since_ms=since, keep=keep)
        finally:
            cache.end_load(kind, ident, view)
        return view

    def _covers_now(self, view: MemoryView) -> bool:
        """``view`` holds the whole load window of now (not so when the
        clock stepped back since it loaded)."""
        return view.covers(self.clock.now_ms() - self.settings.longest_ttl_ms)

    async def server_settings(self, server_id: str) -> ServerSettings:
        async def read(_: int) -> ServerSettings:
            return await self.adapter.load_server_settings(server_id)

        return await self._cached("settings", server_id, self._cache.settings, read,
                                  self._cache.put_settings)

    async def profile_for(self, server_id: str | None) -> ServerProfile:
        """The effective configuration of a server (defaults for a DM)."""
        if server_id is None:
            return self.profiles.profile("", None)
        return self.profiles.profile(server_id, await self.server_settings(server_id))

    async def servers_settings(self, server_ids: Iterable[str]) -> dict[str, ServerSettings]:
        return {sid: await self.server_settings(sid) for sid in set(server_ids)}

    async def server_memories(self, server_id: str) -> MemoryView:
        keep = min(COLD_VIEW_ROWS, self.settings.cache_max_rows_per_view)

        async def newest(since: int) -> list[MemoryRecord]:
            (rows,) = await self.storage.newest_server_rows([NewestRows(
                server_id=server_id, updated_since_ms=since, limit=keep + 1)])
            return rows

        async def read(_: int) -> MemoryView:
            return await self._read_view("server", server_id, newest, keep=keep)

        servers = self._cache.servers

        def install(view: MemoryView, _: int) -> None:
            servers.install(server_id, view)

        return await self._cached("server", server_id, servers, read, install, self._covers_now)

    async def user_view(self, user_id: str) -> UserView:
        cache = self._cache

        async def read(_: int) -> UserView:
            prefs: list[UserPrefs] = []

            async def rows(since: int) -> list[MemoryRecord]:
                prefs.append(await self.adapter.load_user_prefs(user_id))
                return await self.adapter.load_user_memories(user_id, updated_since_ms=since)

            memories = await self._read_view("user", user_id, rows)
            return UserView(prefs=prefs[0], memories=memories)

        def install(view: UserView, began: int) -> None:
            if not cache.prefs_marks.changed_since(user_id, began):
                cache.users.install(user_id, view)

        return await self._cached("user", user_id, cache.users, read, install,
                                  lambda view: self._covers_now(view.memories))

    def cached_scope(self, view: MemoryView, scope: Scope) -> ScopedRows | None:
        """The rows ``view`` keeps for builds of ``scope``, if it keeps them."""
        return view.scoped(scope)

    async def scope_rows(self, server_id: str, view: MemoryView, scope: Scope, *,
                         now_ms: int, max_rows: int) -> ScopedRows:
        """The rows of server ``server_id`` (whose cached view is ``view``) a
        build of ``scope`` may show: kept on the view, else read once
        (concurrent builds share the read) under the load protocol of every
        view (:meth:`MemoryCache.begin_load`): what commits during the read
        is replayed onto it, and it is kept only when that order is known
        and ``view`` is still the server's view."""
        cached = view.scoped(scope)
        if cached is not None and cached.scope == scope and cached.max_rows >= max_rows:
            return cached
        cache, env = self._cache, self.settings
        crude_since = now_ms - env.crude_ttl_ms

        async def load() -> ScopedRows:
            scoped: ScopedRows | None = None
            for _ in range(SCOPE_READS):
                epoch = cache.epoch
                cache.begin_load("server", server_id, scope)
                scoped = None
                try:
                    read = _scope_read(server_id, scope, since_ms=now_ms - env.longest_ttl_ms,
                                       crude_since_ms=crude_since, max_rows=max_rows)
                    (rows,) = await self.storage.newest_server_rows([read])
                    # More stand below: the last row read says from where it lacks rows.
                    below = place(rows.pop()) if len(rows) == read.limit else None
                    scoped = cache.new_scope(scope, rows, crude_since_ms=crude_since,
                                             max_rows=max_rows)
                    if below is not None:
                        scoped.lacks_from(below)
                finally:
                    ordered = cache.end_load("server", server_id, scoped, scope)
                assert scoped is not None
                if ordered:
                    if cache.epoch == epoch and cache.servers.peek(server_id) is view:
                        view.add_scope(scoped)
                    return scoped
            assert scoped is not None
            return scoped  # writes kept racing the read: this build's answer only

        return await self._single_flight(("scope", server_id, scope, max_rows), load)

    async def live_record(self, key: MemoryKey) -> MemoryRecord | None:
        """The row of ``key``, however old (its counter is the truth even after
        its content expired). Cached, including "no such row"."""
        view = (await self.server_memories(key.server_id) if key.scope_kind == "server"
                else (await self.user_view(key.user_id)).memories)
        record = view.records.get(key)
        if record is not None or key in view.absent:
            return record
        return await self.read_memory(key)

    async def read_memory(self, key: MemoryKey) -> MemoryRecord | None:
        """The stored row of ``key`` (always from the database), refreshing
        the cache on the way."""
        since = self._cache.mark()
        record = await self.adapter.get_memory(key)
        if record is None:
            self._cache.note_absent(key)
        else:
            self._cache.apply([record], since)
        return record

    async def read_settings(self, server_id: str) -> ServerSettings:
        """A server's stored settings (always from the database: another
        process may have changed them), refreshing the cache on the way."""
        since = self._cache.mark()
        stored = await self.adapter.load_server_settings(server_id)
        self._cache.put_settings(stored, since)
        return stored

    async def read_prefs(self, user_id: str) -> UserPrefs:
        """A user's stored preferences, refreshing the cache on the way."""
        since = self._cache.mark()
        prefs = await self.adapter.load_user_prefs(user_id)
        self._cache.put_prefs(prefs, since)
        return prefs

    # -- writes: database first, then the cache from what committed -------------------
    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        keys = [w.key for w in writes]
        reported = self._reporter("capture")
        if reported is not None:
            return await self._write_reported(reported.capture_reported, writes, keys)
        return await self._write_through(self.adapter.capture, writes, keys)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        keys = [w.key for w in writes]
        reported = self._reporter("write_memory")
        if reported is not None:
            return await self._write_reported(reported.write_memory_reported, writes, keys)
        return await self._write_through(self.adapter.write_memory, writes, keys)

    def _reporter(self, method: str) -> ReportedWrites | None:
        """The adapter, when its reported twin of ``method`` may be used: not
        when the adapter object itself was given its own ``method`` (a patched
        method stays in the path)."""
        reported = self._reported
        if reported is None or method in getattr(reported, "__dict__", ()):
            return None
        return reported

    async def _write_reported(self, write: Callable[[W, WriteReport],
                                                    Awaitable[list[MemoryRecord]]],
                              writes: W, keys: Sequence[MemoryKey]) -> list[MemoryRecord]:
        """:meth:`_write_through` for an adapter that reports the outcome: it
        calls back when the write ends, even when the caller was cancelled
        meanwhile, so no task of our own is needed to keep the cache in step."""
        cache = self._cache
        try:
            return await write(writes, _Mirror(cache, keys, cache.mark()))
        except asyncio.CancelledError:
            raise  # the write goes on and reports to its mirror
        except BaseException:
            # Also when the write failed before it started (nothing to drop then),
            # or an adapter broke its word: dropping is always safe.
            self._cache.drop_scopes(keys)
            raise

    async def _write_through(self, write: Callable[[W], Coroutine[Any, Any, list[MemoryRecord]]],
                             writes: W, keys: Sequence[MemoryKey]) -> list[MemoryRecord]:
        """Commit, then mirror the committed rows into the cache.

        A caller cancelled while its write is queued does not cancel the write
        (it may already be committing); the rows still reach the cache when it
        finishes, so the cache never lags behind what the database holds. A
        write that fails may still have committed (a connection lost during
        COMMIT), so the views of its keys are dropped and reload.
        """
        since = self._cache.mark()
        task = asyncio.ensure_future(write(writes))
        try:
            records = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(lambda done: self._apply_when_done(done, keys, since))
            raise
        except BaseException:
            self._cache.drop_scopes(keys)
            raise
        self._cache.apply(records, since)
        return records

    def _apply_when_done(self, task: asyncio.Future[list[MemoryRecord]],
                         keys: Sequence[MemoryKey], since: int) -> None:
        if task.cancelled() or task.exception() is not None:
            self._cache.drop_scopes(keys)
        else:
            self._cache.apply(task.result(), since)

    async def _database_first(self, write: Callable[[], Awaitable[T]],
                              drop: Callable[[], None]) -> tuple[T, int]:
        """Run ``write`` with the change mark taken before it; on a failure
        ``drop`` what it may have changed (it may have committed before the
        failure was seen). The caller mirrors what committed, with the mark.
        (Turn writes take :meth:`_write_through`, which also outlives a
        cancelled caller.)"""
        since = self._cache.mark()
        try:
            return await write(), since
        except BaseException:
            drop()
            raise

    async def write_row(self, key: MemoryKey,
                        write: Callable[[], Awaitable[MemoryRecord | None]]
                        ) -> MemoryRecord | None:
        """A conditional rewrite of one row (``None``: it did not apply)."""
        done, since = await self._database_first(write, lambda: self._cache.drop_scopes([key]))
        if done is not None:
            self._cache.apply([done], since)
        return done

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        """Delete the rows ``flt`` matches and forget them in the cache. On a
        failure, which rows went is unknown: the views that may hold them
        reload (the filter's user's view, or the whole cache)."""
        def drop() -> None:
            if flt.scope_kind == "user" and flt.user_id is not None:
                self._cache.drop_user(flt.user_id)
            else:
                self._cache.drop_all()

        removed, since = await self._database_first(
            lambda: self.adapter.delete_memories(flt), drop)
        self._cache.forget_rows(removed, since)
        return removed

    async def write_settings(self, server_id: str,
                             write: Callable[[], Awaitable[ServerSettings]]) -> ServerSettings:
        """Write a server's settings and mirror what committed."""
        stored, since = await self._database_first(
            write, lambda: self._cache.drop_settings(server_id))
        self._cache.put_settings(stored, since)
        return stored

    async def write_categories(
            self, server_id: str,
            write: Callable[[], Awaitable[tuple[ServerSettings, list[MemoryKey]]]],
    ) -> tuple[ServerSettings, list[MemoryKey]]:
        """Replace a server's categories (which may clear its server memories)
        and mirror what committed."""
        def drop() -> None:
            self._cache.drop_settings(server_id)
            self._cache.drop_scopes([MemoryKey.server(server_id, "", None)])

        (stored, removed), since = await self._database_first(write, drop)
        self._cache.put_settings(stored, since)
        self._cache.forget_rows(removed, since)
        return stored, removed

    async def write_prefs(self, user_id: str,
                          write: Callable[[], Awaitable[UserPrefs]]) -> UserPrefs:
        """Write a user's preferences and mirror what committed."""
        prefs, since = await self._database_first(write, lambda: self._cache.drop_user(user_id))
        self._cache.put_prefs(prefs, since)
        return prefs

    async def erase_prefs(self, user_id: str, erase: Callable[[], Awaitable[bool]]) -> bool:
        """Delete a user's preferences; their view reloads with the defaults."""
        try:
            return await erase()
        finally:
            self._cache.drop_user(user_id)

    # -- staleness and other processes' changes -------------------------------------
    def max_view_age_ms(self, hearing: Hearing) -> int | None:
        """How old a cached view may get while the store hears other
        processes' writes as ``hearing`` says (``None``: no limit). The one
        home of that rule:

        * ``alone``: nothing to hear (no listener): ``cache_max_age_seconds``;
        * ``listening``: notices arrive: the same, 300 s by default;
        * ``unheard``: listening, but notices are known not to arrive:
          at most ``unheard_cache_max_age_seconds``;
        * ``deaf``: the listener is down: at most ``listener_check_seconds``."""
        env = self.settings
        if hearing == "alone":
            return env.cache_max_age_ms(listening=False)
        listening = env.cache_max_age_ms(listening=True)
        if hearing == "listening":
            return listening
        bound_s = (env.unheard_cache_max_age_seconds if hearing == "unheard"
                   else env.listener_check_seconds)
        bound = int(bound_s * 1000)
        return bound if listening is None else min(bound, listening)

    def set_staleness(self, hearing: Hearing) -> None:
        """Hear other processes' writes as ``hearing`` says from now on:
        cached views older than :meth:`max_view_age_ms` reload."""
        self.hearing = hearing
        self._cache.expire_after(self.max_view_age_ms(hearing), self.clock.now_ms)

    def flush(self) -> None:
        """Drop the whole cache (what other processes changed meanwhile is
        unknown); what any call that began before now read is not installed."""
        self._cache.drop_all()
        self._cache.stats.flushes += 1

    def heard(self, notice: ChangeNotice) -> list[MemoryKey]:
        """Mirror another process's committed change: drop what it names,
        and return the changed rows a cached view holds, to read again
        (:meth:`reread`)."""
        cache = self._cache
        cache.stats.remote_changes += 1
        if notice.everything:
            self.flush()
            return []
        for server_id in notice.servers:
            cache.drop_settings(server_id)
        for user_id in notice.users:
            cache.drop_user(user_id)
        if notice.purged_before_ms is not None:
            self.heard_purge(notice.purged_before_ms)
        return [key for key in notice.keys if cache.holds_scope(key)]

    def holds(self, key: MemoryKey) -> bool:
        """A cached or loading view would show ``key``'s row."""
        return self._cache.holds_scope(key)

    def change_mark(self) -> int:
        """A change mark to take before a database call mirrored later
        (:meth:`purged`, :meth:`heard_removed`)."""
        return self._cache.mark()

    def purged(self, cutoff_ms: int, since: int, *, finished: bool) -> None:
        """Mirror a purge of rows untouched since ``cutoff_ms`` that began at
        mark ``since``. One that stopped half-way deleted some of them and not
        others: the views holding any such row reload instead."""
        cache = self._cache
        if finished:
            cache.forget_older_than(cutoff_ms, since)
            return
        keys = [k for view in cache.servers.values() for k in view.keys_older_than(cutoff_ms)]
        keys += [k for user in cache.users.values()
                 for k in user.memories.keys_older_than(cutoff_ms)]
        if keys:
            cache.drop_scopes(keys)

    def heard_purge(self, cutoff_ms: int) -> None:
        """Another process purged rows untouched since ``cutoff_ms``."""
        self._cache.forget_older_than(cutoff_ms, self._cache.mark())

    async def reread(self, key: MemoryKey) -> None:
        """Read a row another process changed and mirror it (versioned like
        every change). Its view drops when the read fails (then this raises)."""
        cache = self._cache
        since = cache.mark()
        try:
            record = await self.adapter.get_memory(key)
        except BaseException:
            cache.drop_scopes([key])
            raise
        if record is None:
            cache.forget_rows([key], since)
        else:
            cache.apply([record], since)

    # -- the admin API's storage calls: every capability filled in -------------------
    @functools.cached_property
    def storage(self) -> CompleteStorage:
        """The adapter with every optional capability, its own or the
        fallback (see :mod:`stm_core.storage.complete`)."""
        return CompleteStorage(lambda: self.adapter)

    async def list_memories(self, flt: MemoryFilter) -> list[MemoryRecord]:
        """The stored rows ``flt`` matches (always from the database)."""
        return await self.adapter.list_memories(flt)

    async def update_settings(self, server_id: str,
                              changes: Mapping[str, object]) -> ServerSettings:
        return await self.write_settings(server_id, lambda: self.adapter.update_server_settings(
            server_id, changes, now_ms=self.clock.now_ms()))

    async def change_private_channels(self, server_id: str, *, add: frozenset[str],
                                      remove: frozenset[str]) -> ServerSettings:
        """Add and remove private channels as one step (see ``storage``)."""
        return await self.write_settings(server_id, lambda: self.storage.change_private_channels(
            server_id, add=add, remove=remove, now_ms=self.clock.now_ms()))

    async def replace_categories(self, server_id: str, categories: Sequence[CategoryRecord]
                                 ) -> tuple[ServerSettings, list[MemoryKey]]:
        """Replace the categories and clear the server's memories."""
        return await self.write_categories(server_id, lambda: self.adapter.replace_categories(
            server_id, categories, now_ms=self.clock.now_ms(), clear_server_memories=True))

    async def replace_server_config(self, server_id: str, changes: Mapping[str, object],
                                    categories: Sequence[CategoryRecord]
                                    ) -> tuple[ServerSettings, list[MemoryKey]]:
        """Settings and categories as one step where the adapter can (see ``storage``)."""
        return await self.write_categories(server_id, lambda: self.storage.replace_server_config(
            server_id, changes, categories, now_ms=self.clock.now_ms()))

    async def set_opt_in(self, user_id: str, opt_in: bool) -> UserPrefs:
        return await self.write_prefs(user_id, lambda: self.adapter.set_user_prefs(
            user_id, crossserver_opt_in=opt_in, now_ms=self.clock.now_ms()))


def _count(kind: str, *, hit: bool) -> None:
    """Count a cached read of ``kind`` in the process-wide metrics."""
    name = f"{kind}_hits" if hit else f"{kind}_misses"
    setattr(telemetry.counts, name, getattr(telemetry.counts, name) + 1)


class _Mirror:
    """A reported write's outcome into the cache: the rows it committed, or,
    when it failed (it may still have committed), its scopes dropped. One
    object rather than a closure: a write in flight keeps it alive, and with
    many in flight each object counts towards the garbage collector's next
    pass."""

    __slots__ = ("_cache", "_keys", "_since")

    def __init__(self, cache: MemoryCache, keys: Sequence[MemoryKey], since: int) -> None:
        self._cache = cache
        self._keys = keys
        self._since = since

    def __call__(self, records: list[MemoryRecord] | None) -> None:
        if records is None:
            self._cache.drop_scopes(self._keys)
            return
        try:
            self._cache.apply(records, self._since)
        except BaseException:
            self._cache.drop_scopes(self._keys)
            raise


def _scope_read(server_id: str, scope: Scope, *, since_ms: int, crude_since_ms: int,
                max_rows: int) -> NewestRows:
    """What fills a scope: the newest rows it takes, as many as its two
    halves keep and one more (which tells whether, and from where, it lacks
    rows)."""
    lineage, hidden = scope
    return NewestRows(server_id=server_id, updated_since_ms=since_ms,
                      limit=2 * scope_half(max_rows) + 1, lineage=lineage,
                      hidden_channels=hidden, crude_since_ms=crude_since_ms)
