"""The object a host opens on a database URL: :class:`Stm`.

Per turn a host calls four things::

    async with open_store("sqlite+aiosqlite:///bot.db") as stm:
        ctx = await stm.build_context(turn)          # memory items, nudge, depths
        messages = inject(dialogue, ctx)              # splice into the prompt
        tool = await stm.tool_schema(turn, "openai")  # offer the tool (or None)
        result = await stm.apply_tool_call(turn, args)  # when the model calls it
        await stm.record_turn(turn, history, responses)  # after the reply

Reads come from the cache (a warm turn makes no database call); writes go to
the database first and reach the cache only from the committed rows. A write
that fails drops the cached views it touched, since it may have committed
before the failure was seen. With several processes on one PostgreSQL
database, each store listens for the others' writes (:mod:`stm_core.invalidation`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from stm_core import telemetry
from stm_core.arguments import (
    check_flag,
    check_iterable,
    check_optional_text,
    instance_of,
    instances_of,
)
from stm_core.cache import MemoryCache, MemoryView, UserView
from stm_core.clock import Clock, SystemClock
from stm_core.errors import ConfigurationError, ValidationError
from stm_core.hooks import Hooks
from stm_core.models import (
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    StmContext,
    ToolResult,
    Turn,
)
from stm_core.plugins import StmPluginManager, create_plugin_manager
from stm_core.profile import ProfileCache, ServerProfile, check_default_render_mode
from stm_core.settings import Settings
from stm_core.storage.factory import adapter_for_url
from stm_core.storage.protocol import (
    ReportedWrites,
    StorageAdapter,
    WriteReport,
    reports_write_outcomes,
)
from stm_core.storage.records import (
    CaptureWrite,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    SchemaStatus,
    ServerSettings,
)

if TYPE_CHECKING:
    from stm_core.admin import Admin
    from stm_core.invalidation import InvalidationListener
    from stm_core.janitor import Janitor

log = logging.getLogger("stm.store")
T = TypeVar("T")
W = TypeVar("W")


class Stm:
    """Short-term memory for one database. Build it with :func:`open_store`."""

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
        self.schema_status: SchemaStatus | None = None
        # Turns whose tool call already succeeded (the once-per-turn rule).
        self._updated_turns: weakref.WeakSet[Turn] = weakref.WeakSet()
        self._inflight: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._admin: Admin | None = None
        self._janitor: Janitor | None = None
        #: Hears other processes' writes (PostgreSQL); ``None`` when alone.
        self.listener: InvalidationListener | None = None
        self.cache.expire_after(self.settings.cache_max_age_ms(listening=False),
                                self.clock.now_ms)
        telemetry.register_metrics()

    @property
    def adapter(self) -> StorageAdapter:
        return self._adapter

    @adapter.setter
    def adapter(self, adapter: StorageAdapter) -> None:
        self._adapter = adapter
        self._reported = (cast(ReportedWrites, adapter) if reports_write_outcomes(adapter)
                          else None)

    # -- lifecycle -----------------------------------------------------------
    async def setup(self) -> SchemaStatus:
        self.schema_status = await self.adapter.setup()
        return self.schema_status

    async def start_listening(self) -> None:
        """Follow other processes' writes, when the adapter announces them.

        Does not wait for the database: a listener that cannot connect yet
        keeps trying in the background.
        """
        from stm_core.invalidation import InvalidationListener
        from stm_core.storage.protocol import ChangeFeed

        adapter = self.adapter
        if (self.listener is not None or not isinstance(adapter, ChangeFeed)
                or not adapter.announces_changes):
            return
        self.listener = InvalidationListener(self, adapter)
        self.cache.expire_after(self.settings.cache_max_age_ms(listening=True),
                                self.clock.now_ms)
        await self.listener.start()  # shortens the expiry if notices do not arrive

    async def aclose(self) -> None:
        if self._janitor is not None:
            await self._janitor.stop()
        if self.listener is not None:
            await self.listener.stop()
        await self.adapter.aclose()

    # -- the four per-turn calls ---------------------------------------------------
    async def build_context(self, turn: Turn) -> StmContext:
        """The short-term-memory part of the prompt for ``turn``. Never raises,
        except :class:`ValidationError` when ``turn`` is not a :class:`Turn`."""
        instance_of(turn, Turn, "turn")
        build_context = _stages().build_context
        tracer = telemetry.tracer()
        if tracer is None:  # nobody collects spans: the plain call
            context = await build_context(self, turn)
        else:
            with tracer.start_as_current_span("stm.build_context") as span:
                misses = self.cache.stats.misses
                context = await build_context(self, turn)
                span.set_attributes({
                    **self._turn_attributes(turn),
                    "stm.items": len(context.memory_items),
                    "stm.nudge": context.nudge_item is not None,
                    "stm.cache_hit": self.cache.stats.misses == misses,
                    "stm.memory_depth": context.memory_injection_depth})
        if context.nudge_item is not None:
            telemetry.counts.nudges_shown += 1
        return context

    def _turn_attributes(self, turn: Turn) -> dict[str, str]:
        """Span attributes naming a turn's place (only computed when tracing)."""
        server = turn.server_id
        settings = self.cache.settings.get(server) if server is not None else None
        mode = self.profiles.profile(server or "", settings).render_mode.key
        return {"stm.server": server if server is not None else "dm",
                "stm.channel": turn.channel_id, "stm.mode": mode}

    async def tool_available(self, turn: Turn) -> bool:
        """Whether ``update_short_term_memory`` may be offered this turn."""
        instance_of(turn, Turn, "turn")
        return await _stages().tool_available(self, turn)

    async def tool_schema(self, turn: Turn, format: str | None = None) -> dict[str, Any] | None:
        """The tool declaration for ``turn`` in a provider format, or ``None``
        when the tool is not offered. ``format`` is a registered format key
        (``"openai"``, ``"openai-strict"``, ``"openai-responses"``,
        ``"openai-responses-strict"``, ``"anthropic"``, ``"gemini"``,
        ``"neutral"``); by default the format of the turn's provider and model
        (the tool-format rule of the host guide). Raises ``ValidationError`` for
        an unknown key and ``UnknownProvider`` for a provider no rule knows."""
        instance_of(turn, Turn, "turn")
        return await _stages().tool_schema(self, turn, format)  # checks format, naming the keys

    async def apply_tool_call(self, turn: Turn,
                              arguments: Mapping[str, object] | str) -> ToolResult:
        """Apply the model's ``update_short_term_memory`` call (its arguments as
        a mapping or the raw JSON string). Never raises for what the model
        sent: failures come back as a :class:`ToolResult` to hand to the model.
        A ``turn`` that is not a :class:`Turn` raises :class:`ValidationError`."""
        instance_of(turn, Turn, "turn")
        with telemetry.span("stm.apply_tool_call") as span:
            result = await _stages().apply_tool_call(self, turn, arguments)
            telemetry.tool_call(result.ok, result.code)
            if span is not None:
                span.set_attributes({**self._turn_attributes(turn), "stm.ok": result.ok,
                                     "stm.code": result.code or "",
                                     "stm.items": len(result.written)})
        return result

    async def record_window(self, turn: Turn, window: Sequence[HistoryMessage],
                            responses: Sequence[PersonaResponse], *,
                            stop_response: bool = False,
                            privacy_full: bool = False) -> RecordResult:
        """Post-turn effects: count the turn and keep the channel's last lines.

        ``window`` is the history window the host sent the model this turn
        (oldest first), not only the messages that are new since the last
        call: the stored lines become the last ones of ``window`` followed by
        ``responses``, and what was stored before is replaced.
        ``window`` and ``responses`` are lists of :class:`HistoryMessage` and
        :class:`PersonaResponse` (plain dicts raise :class:`ValidationError`).
        """
        _check_record_arguments(turn, window, responses, stop_response, privacy_full)
        record_turn = _stages().record_turn
        if telemetry.tracer() is None:
            return await record_turn(self, turn, window, responses,
                                     stop_response=stop_response, privacy_full=privacy_full)
        return await self._traced_record(turn, window, responses, stop_response=stop_response,
                                         privacy_full=privacy_full)

    async def record_turn(self, turn: Turn, history: Sequence[HistoryMessage],
                          responses: Sequence[PersonaResponse], *,
                          stop_response: bool = False,
                          privacy_full: bool = False) -> RecordResult:
        """The same as :meth:`record_window`: ``history`` is the whole window."""
        # Not a call of record_window: one coroutine less on every turn.
        _check_record_arguments(turn, history, responses, stop_response, privacy_full)
        record_turn = _stages().record_turn
        if telemetry.tracer() is None:
            return await record_turn(self, turn, history, responses,
                                     stop_response=stop_response, privacy_full=privacy_full)
        return await self._traced_record(turn, history, responses, stop_response=stop_response,
                                         privacy_full=privacy_full)

    async def _traced_record(self, turn: Turn, window: Sequence[HistoryMessage],
                             responses: Sequence[PersonaResponse], *, stop_response: bool,
                             privacy_full: bool) -> RecordResult:
        tracer = telemetry.tracer()
        assert tracer is not None
        with tracer.start_as_current_span("stm.record_turn") as span:
            result = await _stages().record_turn(self, turn, window, responses,
                                                 stop_response=stop_response,
                                                 privacy_full=privacy_full)
            span.set_attributes({**self._turn_attributes(turn),
                                 "stm.recorded": result.recorded,
                                 "stm.skipped_reason": result.skipped_reason or "",
                                 "stm.items": len(window) + len(responses)})
        return result

    @property
    def admin(self) -> Admin:
        """Settings, categories, prompts, privacy and memory edits."""
        if self._admin is None:
            from stm_core.admin import Admin

            self._admin = Admin(self)
        return self._admin

    @property
    def janitor(self) -> Janitor:
        """Deletes rows untouched for ``janitor_retention_days``, in batches."""
        if self._janitor is None:
            from stm_core.janitor import Janitor

            self._janitor = Janitor(self)
        return self._janitor

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
            epoch = self.cache.epoch
            value = await self.adapter.load_server_settings(server_id)
            if self.cache.epoch == epoch:
                self.cache.put_settings(value)
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
            epoch = self.cache.epoch
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
            if self.cache.epoch == epoch:
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
        record = await self.adapter.get_memory(key)
        if record is None:
            view.absent.add(key)
        else:
            view.apply(record)
        return record

    # -- writes: database first, then the cache from what it returned ----------------
    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        keys = [w.key for w in writes]
        reported = self._reporter("capture")
        if reported is not None:
            return await self._write_reported(reported.capture_reported, writes, keys)
        return await self._write_through(self.adapter.capture(writes), keys)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        keys = [w.key for w in writes]
        reported = self._reporter("write_memory")
        if reported is not None:
            return await self._write_reported(reported.write_memory_reported, writes, keys)
        return await self._write_through(self.adapter.write_memory(writes), keys)

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
        def mirror(records: list[MemoryRecord] | None) -> None:
            if records is None:
                self.cache.drop_scopes(keys)
                return
            try:
                self.cache.apply(records)
            except BaseException:
                self.cache.drop_scopes(keys)
                raise

        try:
            return await write(writes, mirror)
        except asyncio.CancelledError:
            raise  # the write goes on and reports to ``mirror``
        except BaseException:
            # Also when the write failed before it started (nothing to drop then),
            # or an adapter broke its word: dropping is always safe.
            self.cache.drop_scopes(keys)
            raise

    async def _write_through(self, write: Coroutine[Any, Any, list[MemoryRecord]],
                             keys: Sequence[MemoryKey]) -> list[MemoryRecord]:
        """Commit, then mirror the committed rows into the cache.

        A caller cancelled while its write is queued does not cancel the write
        (it may already be committing); the rows still reach the cache when it
        finishes, so the cache never lags behind what the database holds. A
        write that fails may still have committed (a connection lost during
        COMMIT), so the views of its keys are dropped and reload.
        """
        task = asyncio.ensure_future(write)
        try:
            records = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(lambda done: self._apply_when_done(done, keys))
            raise
        except BaseException:
            self.cache.drop_scopes(keys)
            raise
        self.cache.apply(records)
        return records

    def _apply_when_done(self, task: asyncio.Future[list[MemoryRecord]],
                         keys: Sequence[MemoryKey]) -> None:
        if task.cancelled() or task.exception() is not None:
            self.cache.drop_scopes(keys)
        else:
            self.cache.apply(task.result())


def _check_record_arguments(turn: object, window: object, responses: object,
                            stop_response: object, privacy_full: object) -> None:
    """What record_turn and record_window accept (ValidationError otherwise)."""
    instance_of(turn, Turn, "turn")
    instances_of(window, HistoryMessage, "history",
                 'HistoryMessage(author_type="user", content="...", speaker_name="...")')
    instances_of(responses, PersonaResponse, "responses",
                 'PersonaResponse(content="...", persona_name="...")')
    check_flag(stop_response, "stop_response")
    check_flag(privacy_full, "privacy_full")


class _Stages:
    """The per-turn calls' homes. They load on the first turn, not with the
    store (the ``stm`` command opens stores and builds no context), and are
    then kept: an import statement on every call costs about 2 µs."""

    def __init__(self) -> None:
        from stm_core.pipeline.build import build_context
        from stm_core.record import record_turn
        from stm_core.tool.apply import apply_tool_call
        from stm_core.tool.gate import tool_available
        from stm_core.tool.schema import tool_schema

        self.build_context = build_context
        self.record_turn = record_turn
        self.apply_tool_call = apply_tool_call
        self.tool_available = tool_available
        self.tool_schema = tool_schema


@functools.cache
def _stages() -> _Stages:
    return _Stages()


def with_listen_url(settings: Settings, listen_url: object) -> Settings:
    """``settings`` with the listening connection's URL replaced (checked)."""
    if not isinstance(listen_url, str):
        raise ValidationError(f"listen_url must be a string, not {type(listen_url).__name__}",
                              field="listen_url",
                              allowed="a PostgreSQL URL, e.g. 'postgresql://stm@db:5432/stm'")
    return attrs.evolve(settings, listen_url=listen_url)


@asynccontextmanager
async def open_store(url: str | None = None, *, settings: Settings | None = None,
                     plugins: Iterable[object] = (), load_entrypoints: bool = True,
                     plugin_manager: StmPluginManager | None = None,
                     clock: Clock | None = None,
                     start_janitor: bool = False,
                     listen_for_changes: bool = True,
                     listen_url: str | None = None) -> AsyncIterator[Stm]:
    """Open stm on a database URL (async context manager).

    :param url: e.g. ``sqlite+aiosqlite:///bot.db``,
        ``postgresql+asyncpg://user@host/db`` or ``memory://``; defaults to
        ``settings.database_url`` (``STM_DATABASE_URL``).
    :param settings: defaults to :meth:`Settings.from_env`.
    :param plugins: plugin objects or modules to register in code.
    :param load_entrypoints: also load plugins from the ``stm`` entry-point group.
    :param plugin_manager: a manager built by the host (then ``plugins`` and
        ``load_entrypoints`` are ignored).
    :param clock: an injectable clock (tests, replays).
    :param start_janitor: run the janitor on its interval while the store is open.
    :param listen_for_changes: follow other processes' writes (PostgreSQL). A
        short-lived store (one command) turns it off; its own writes are still
        announced to the others.
    :param listen_url: PostgreSQL: a URL straight to the database for the
        listening connection, when ``url`` goes through a connection pooler
        in transaction mode (where LISTEN hears nothing); overrides
        ``settings.listen_url`` (``STM_LISTEN_URL``). See docs/deployment.md.

    The schema is created or upgraded on open. On PostgreSQL (unless
    ``cross_process_invalidation`` is off) the store also listens for other
    processes' writes, so their changes reach this process's cache.
    """
    check_optional_text(url, "url")
    if settings is not None:
        instance_of(settings, Settings, "settings")
    check_iterable(plugins, "plugins", "plugin objects or modules")
    settings = settings or Settings.from_env()
    if listen_url is not None:
        settings = with_listen_url(settings, listen_url)
    url = url or settings.database_url
    if not url:
        raise ConfigurationError(
            "no database URL: pass one to open_store() or set STM_DATABASE_URL "
            "(e.g. sqlite+aiosqlite:///stm.db)")
    pm = plugin_manager or create_plugin_manager(load_entrypoints=load_entrypoints,
                                                 plugins=plugins)
    check_default_render_mode(Hooks(pm), settings)
    adapter = adapter_for_url(url, settings, plugin_manager=pm)
    stm = Stm(adapter, pm=pm, settings=settings, clock=clock)
    try:
        await stm.setup()
        if listen_for_changes:
            await stm.start_listening()
        if start_janitor:
            stm.janitor.start()
        yield stm
    finally:
        await stm.aclose()
