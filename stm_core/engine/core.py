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
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar, cast

from stm_core._util import telemetry
from stm_core._util.clock import Clock, SystemClock
from stm_core.engine.cache import MemoryCache, MemoryView, UserView
from stm_core.engine.profile import ProfileCache, ServerProfile
from stm_core.models import Turn
from stm_core.plugins import StmPluginManager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.storage.protocol import (
    ReportedWrites,
    StorageAdapter,
    WriteReport,
    reports_write_outcomes,
)
from stm_core.storage.records import (
    CaptureWrite,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    ServerSettings,
    UserPrefs,
)

T = TypeVar("T")
W = TypeVar("W")


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
        self.cache = MemoryCache(max_servers=self.settings.cache_max_servers,
                                 max_users=self.settings.cache_max_users,
                                 max_rows_per_view=self.settings.cache_max_rows_per_view)
        self.profiles = ProfileCache(self.hooks, self.settings)
        # Turns whose tool call already succeeded (the once-per-turn rule).
        self._updated_turns: weakref.WeakSet[Turn] = weakref.WeakSet()
        self._inflight: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self.cache.expire_after(self.settings.cache_max_age_ms(listening=False),
                                self.clock.now_ms)

    @property
    def adapter(self) -> StorageAdapter:
        return self._adapter

    @adapter.setter
    def adapter(self, adapter: StorageAdapter) -> None:
        self._adapter = adapter
        self._reported = (cast(ReportedWrites, adapter) if reports_write_outcomes(adapter)
                          else None)

    # -- once-per-turn bookkeeping ---------------------------------------------
    def tool_already_used(self, turn: Turn) -> bool:
        return turn.stm_update_disabled or turn in self._updated_turns

    def mark_tool_used(self, turn: Turn) -> None:
        self._updated_turns.add(turn)

    # -- cached reads (used by the pipeline, the tool and admin) -------------------
    async def _single_flight(self, key: tuple[str, str],
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

    def warm_turn_state(self, server_id: str | None, user_id: str
                        ) -> tuple[ServerProfile, UserView, MemoryView | None] | None:
        """A turn's profile, user view and server view when the cache holds all
        of them (counted as hits, as the loaders below count them), else
        ``None`` and nothing counted: the loaders then read what is missing.
        The warm turn takes this path, without a coroutine per read."""
        cache = self.cache
        user = cache.users.get(user_id)
        if user is None:
            return None
        if server_id is None:
            cache.stats.hits += 1
            telemetry.counts.user_hits += 1
            return self.profiles.profile("", None), user, None
        settings = cache.settings.get(server_id)
        server = cache.servers.get(server_id) if settings is not None else None
        if server is None:
            return None
        cache.stats.hits += 3
        counts = telemetry.counts
        counts.settings_hits += 1
        counts.user_hits += 1
        counts.server_hits += 1
        return self.profiles.profile(server_id, settings), user, server

    async def server_settings(self, server_id: str) -> ServerSettings:
        cached = self.cache.settings.get(server_id)
        if cached is not None:
            self.cache.stats.hits += 1
            telemetry.counts.settings_hits += 1
            return cached

        async def load() -> ServerSettings:
            self.cache.stats.misses += 1
            telemetry.counts.settings_misses += 1
            epoch, since = self.cache.epoch, self.cache.mark()
            value = await self.adapter.load_server_settings(server_id)
            if self.cache.epoch == epoch:
                self.cache.put_settings(value, since)
            return value

        return await self._single_flight(("settings", server_id), load)

    async def profile_for(self, server_id: str | None) -> ServerProfile:
        """The effective configuration of a server (defaults for a DM)."""
        if server_id is None:
            return self.profiles.profile("", None)
        return self.profiles.profile(server_id, await self.server_settings(server_id))

    async def servers_settings(self, server_ids: Iterable[str]) -> dict[str, ServerSettings]:
        return {sid: await self.server_settings(sid) for sid in set(server_ids)}

    async def server_memories(self, server_id: str) -> MemoryView:
        cached = self.cache.servers.get(server_id)
        if cached is not None:
            self.cache.stats.hits += 1
            telemetry.counts.server_hits += 1
            return cached

        async def load() -> MemoryView:
            self.cache.stats.misses += 1
            telemetry.counts.server_misses += 1
            epoch = self.cache.epoch
            self.cache.begin_load("server", server_id)
            view: MemoryView | None = None
            try:
                since = self.clock.now_ms() - self.settings.longest_ttl_ms
                rows = await self.adapter.load_server_memories(server_id, updated_since_ms=since)
                view = self.cache.new_view(rows)
            finally:
                self.cache.end_load("server", server_id, view)
            if self.cache.epoch == epoch:
                self.cache.servers.put(server_id, view)
            return view

        return await self._single_flight(("server", server_id), load)

    async def user_view(self, user_id: str) -> UserView:
        cached = self.cache.users.get(user_id)
        if cached is not None:
            self.cache.stats.hits += 1
            telemetry.counts.user_hits += 1
            return cached

        async def load() -> UserView:
            self.cache.stats.misses += 1
            telemetry.counts.user_misses += 1
            epoch, began = self.cache.epoch, self.cache.mark()
            self.cache.begin_load("user", user_id)
            memories: MemoryView | None = None
            try:
                since = self.clock.now_ms() - self.settings.longest_ttl_ms
                prefs = await self.adapter.load_user_prefs(user_id)
                rows = await self.adapter.load_user_memories(user_id, updated_since_ms=since)
                memories = self.cache.new_view(rows)
            finally:
                self.cache.end_load("user", user_id, memories)
            view = UserView(prefs=prefs, memories=memories)
            if (self.cache.epoch == epoch
                    and not self.cache.prefs_marks.changed_since(user_id, began)):
                self.cache.users.put(user_id, view)
            return view

        return await self._single_flight(("user", user_id), load)

    async def live_record(self, key: MemoryKey) -> MemoryRecord | None:
        """The row of ``key``, however old (its counter is the truth even after
        its content expired). Cached, including "no such row"."""
        view = (await self.server_memories(key.server_id) if key.scope_kind == "server"
                else (await self.user_view(key.user_id)).memories)
        record = view.records.get(key)
        if record is not None or key in view.absent:
            return record
        since = self.cache.mark()
        record = await self.adapter.get_memory(key)
        if record is None:
            self.cache.note_absent(key)
        else:
            self.cache.apply([record], since)
        return record

    async def read_memory(self, key: MemoryKey) -> MemoryRecord | None:
        """The stored row of ``key`` (always from the database), refreshing
        the cache on the way."""
        since = self.cache.mark()
        record = await self.adapter.get_memory(key)
        if record is None:
            self.cache.note_absent(key)
        else:
            self.cache.apply([record], since)
        return record

    async def read_settings(self, server_id: str) -> ServerSettings:
        """A server's stored settings (always from the database: another
        process may have changed them), refreshing the cache on the way."""
        since = self.cache.mark()
        stored = await self.adapter.load_server_settings(server_id)
        self.cache.put_settings(stored, since)
        return stored

    async def read_prefs(self, user_id: str) -> UserPrefs:
        """A user's stored preferences, refreshing the cache on the way."""
        since = self.cache.mark()
        prefs = await self.adapter.load_user_prefs(user_id)
        self.cache.put_prefs(prefs, since)
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
        cache = self.cache
        try:
            return await write(writes, _Mirror(cache, keys, cache.mark()))
        except asyncio.CancelledError:
            raise  # the write goes on and reports to its mirror
        except BaseException:
            # Also when the write failed before it started (nothing to drop then),
            # or an adapter broke its word: dropping is always safe.
            self.cache.drop_scopes(keys)
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
        since = self.cache.mark()
        task = asyncio.ensure_future(write(writes))
        try:
            records = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(lambda done: self._apply_when_done(done, keys, since))
            raise
        except BaseException:
            self.cache.drop_scopes(keys)
            raise
        self.cache.apply(records, since)
        return records

    def _apply_when_done(self, task: asyncio.Future[list[MemoryRecord]],
                         keys: Sequence[MemoryKey], since: int) -> None:
        if task.cancelled() or task.exception() is not None:
            self.cache.drop_scopes(keys)
        else:
            self.cache.apply(task.result(), since)

    async def _database_first(self, write: Callable[[], Awaitable[T]],
                              drop: Callable[[], None]) -> tuple[T, int]:
        """Run ``write`` with the change mark taken before it; on a failure
        ``drop`` what it may have changed (it may have committed before the
        failure was seen). The caller mirrors what committed, with the mark.
        (Turn writes take :meth:`_write_through`, which also outlives a
        cancelled caller.)"""
        since = self.cache.mark()
        try:
            return await write(), since
        except BaseException:
            drop()
            raise

    async def write_row(self, key: MemoryKey,
                        write: Callable[[], Awaitable[MemoryRecord | None]]
                        ) -> MemoryRecord | None:
        """A conditional rewrite of one row (``None``: it did not apply)."""
        done, since = await self._database_first(write, lambda: self.cache.drop_scopes([key]))
        if done is not None:
            self.cache.apply([done], since)
        return done

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        """Delete the rows ``flt`` matches and forget them in the cache. On a
        failure, which rows went is unknown: the views that may hold them
        reload (the filter's user's view, or the whole cache)."""
        def drop() -> None:
            if flt.scope_kind == "user" and flt.user_id is not None:
                self.cache.drop_user(flt.user_id)
            else:
                self.cache.clear()

        removed, since = await self._database_first(
            lambda: self.adapter.delete_memories(flt), drop)
        self.cache.forget(removed, since)
        return removed

    async def write_settings(self, server_id: str,
                             write: Callable[[], Awaitable[ServerSettings]]) -> ServerSettings:
        """Write a server's settings and mirror what committed."""
        stored, since = await self._database_first(
            write, lambda: self.cache.drop_settings(server_id))
        self.cache.put_settings(stored, since)
        return stored

    async def write_categories(
            self, server_id: str,
            write: Callable[[], Awaitable[tuple[ServerSettings, list[MemoryKey]]]],
    ) -> tuple[ServerSettings, list[MemoryKey]]:
        """Replace a server's categories (which may clear its server memories)
        and mirror what committed."""
        def drop() -> None:
            self.cache.drop_settings(server_id)
            self.cache.drop_scopes([MemoryKey.server(server_id, "", None)])

        (stored, removed), since = await self._database_first(write, drop)
        self.cache.put_settings(stored, since)
        self.cache.forget(removed, since)
        return stored, removed

    async def write_prefs(self, user_id: str,
                          write: Callable[[], Awaitable[UserPrefs]]) -> UserPrefs:
        """Write a user's preferences and mirror what committed."""
        prefs, since = await self._database_first(write, lambda: self.cache.drop_user(user_id))
        self.cache.put_prefs(prefs, since)
        return prefs

    async def erase_prefs(self, user_id: str, erase: Callable[[], Awaitable[bool]]) -> bool:
        """Delete a user's preferences; their view reloads with the defaults."""
        try:
            return await erase()
        finally:
            self.cache.drop_user(user_id)

    def change_mark(self) -> int:
        """A change mark to take before a database call mirrored later
        (:meth:`purged`, :meth:`heard_removed`)."""
        return self.cache.mark()

    def purged(self, cutoff_ms: int, since: int, *, finished: bool) -> None:
        """Mirror a purge of rows untouched since ``cutoff_ms`` that began at
        mark ``since``. One that stopped half-way deleted some of them and not
        others: the views holding any such row reload instead."""
        cache = self.cache
        if finished:
            cache.forget_older_than(cutoff_ms, since)
            return
        keys = [k for view in cache.servers.values() for k in view.keys_older_than(cutoff_ms)]
        keys += [k for user in cache.users.values()
                 for k, r in user.memories.records.items() if r.updated_at_ms < cutoff_ms]
        if keys:
            cache.drop_scopes(keys)

    def heard_purge(self, cutoff_ms: int) -> None:
        """Another process purged rows untouched since ``cutoff_ms``."""
        self.cache.forget_older_than(cutoff_ms, self.cache.mark())

    async def reread(self, key: MemoryKey) -> None:
        """Read a row another process changed and mirror it (versioned like
        every change). Its view drops when the read fails (then this raises)."""
        cache = self.cache
        since = cache.mark()
        try:
            record = await self.adapter.get_memory(key)
        except BaseException:
            cache.drop_scopes([key])
            raise
        if record is None:
            cache.forget([key], since)
        else:
            cache.apply([record], since)


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
