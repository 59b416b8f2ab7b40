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
database, each store listens for the others' writes (:mod:`stm_core.engine.invalidation`).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import attrs

from stm_core._util import telemetry
from stm_core._util.arguments import (
    check_flag,
    check_iterable,
    check_optional_text,
    instance_of,
    instances_of,
)
from stm_core._util.clock import Clock
from stm_core._util.store_lifecycle import CallGate, StoreOpening
from stm_core.admin import Admin
from stm_core.engine import invalidation
from stm_core.engine import janitor as purging
from stm_core.engine.cache import MemoryCache, MemoryView, UserView
from stm_core.engine.core import Engine
from stm_core.engine.profile import ProfileCache, ServerProfile, check_default_render_mode
from stm_core.errors import ConfigurationError, ValidationError
from stm_core.models import (
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    StmContext,
    ToolResult,
    Turn,
)
from stm_core.pipeline import build, record
from stm_core.plugins import StmPluginManager, create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.plugins.storage import adapter_for_url
from stm_core.settings import Settings
from stm_core.storage.protocol import ChangeFeed, StorageAdapter
from stm_core.storage.records import (
    CaptureWrite,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    SchemaStatus,
    ServerSettings,
)
from stm_core.tool import apply, gate, schema

log = logging.getLogger("stm.store")


class Stm:
    """Short-term memory for one database. Build it with :func:`open_store`.

    The host's facade: lifecycle, the per-turn calls, ``admin`` and
    ``janitor``. What they work on (cache, reads, writes) is :attr:`engine`.

    Close it with :meth:`aclose` (or by leaving ``async with``); a store
    collected while open gives a :class:`ResourceWarning`. Once closing
    starts, new calls raise :class:`~stm_core.errors.StoreClosed`, and the
    calls already in flight finish before the database is let go.
    """

    def __init__(self, adapter: StorageAdapter, *, pm: StmPluginManager,
                 settings: Settings | None = None, clock: Clock | None = None) -> None:
        self.engine = Engine(adapter, pm=pm, settings=settings, clock=clock)
        self.schema_status: SchemaStatus | None = None
        self._admin: Admin | None = None
        self._janitor: purging.Janitor | None = None
        #: Hears other processes' writes (PostgreSQL); ``None`` when alone.
        self.listener: invalidation.InvalidationListener | None = None
        self._calls = CallGate()
        #: Set by open_store once the store is open: only then does an
        #: unclosed store warn when it is collected.
        self._opened = False
        self._closing: asyncio.Future[None] | None = None
        telemetry.register_metrics()

    # -- the engine's parts, read through ----------------------------------------
    @property
    def adapter(self) -> StorageAdapter:
        return self.engine.adapter

    @adapter.setter
    def adapter(self, adapter: StorageAdapter) -> None:
        self.engine.adapter = adapter

    @property
    def pm(self) -> StmPluginManager:
        return self.engine.pm

    @property
    def hooks(self) -> Hooks:
        return self.engine.hooks

    @property
    def settings(self) -> Settings:
        return self.engine.settings

    @property
    def clock(self) -> Clock:
        return self.engine.clock

    @property
    def cache(self) -> MemoryCache:
        return self.engine.cache

    @property
    def profiles(self) -> ProfileCache:
        return self.engine.profiles

    # -- lifecycle -----------------------------------------------------------
    async def setup(self) -> SchemaStatus:
        self.schema_status = await self.adapter.setup()
        return self.schema_status

    async def start_listening(self) -> None:
        """Follow other processes' writes, when the adapter announces them.

        Does not wait for the database: a listener that cannot connect yet
        keeps trying in the background.
        """
        adapter = self.adapter
        if (self.listener is not None or not isinstance(adapter, ChangeFeed)
                or not adapter.announces_changes):
            return
        self.listener = invalidation.InvalidationListener(self.engine, adapter)
        await self.listener.start()  # sets how long cached views may live

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` has been called (the close may still run)."""
        return self._calls.closing

    async def aclose(self) -> None:
        """Close the store: refuse new calls, let those in flight finish, then
        stop the janitor and the listener and close the database. Idempotent;
        concurrent callers all return once the one close has finished."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        await self._calls.close()
        try:
            if self._janitor is not None:
                await self._janitor.stop()
            if self.listener is not None:
                await self.listener.stop()
        finally:
            await self.adapter.aclose()

    async def __aenter__(self) -> Stm:
        self._calls.check_open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if getattr(self, "_opened", False) and not self._calls.closing:
            warnings.warn(f"unclosed {self!r}: await its aclose() or use it in async with",
                          ResourceWarning, source=self, stacklevel=2)

    def __repr__(self) -> str:
        state = "closed" if self._calls.closing else "open" if self._opened else "not open"
        return f"<Stm {state}>"

    # -- the four per-turn calls ---------------------------------------------------
    async def build_context(self, turn: Turn) -> StmContext:
        """The short-term-memory part of the prompt for ``turn``. Never raises,
        except :class:`ValidationError` when ``turn`` is not a :class:`Turn`
        and :class:`StoreClosed` after :meth:`aclose`."""
        instance_of(turn, Turn, "turn")
        with self._calls:  # in this frame: a second coroutine per turn costs more than it
            tracer = telemetry.tracer()
            if tracer is None:  # nobody collects spans: the plain call
                context = await build.build_context(self.engine, turn)
            else:
                with tracer.start_as_current_span("stm.build_context") as span:
                    misses = self.cache.stats.misses
                    context = await build.build_context(self.engine, turn)
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
        settings = self.cache.settings.peek(server) if server is not None else None
        mode = self.profiles.profile(server or "", settings).render_mode.key
        return {"stm.server": server if server is not None else "dm",
                "stm.channel": turn.channel_id, "stm.mode": mode}

    async def tool_available(self, turn: Turn) -> bool:
        """Whether ``update_short_term_memory`` may be offered this turn."""
        instance_of(turn, Turn, "turn")
        with self._calls:
            return await gate.tool_available(self.engine, turn)

    async def tool_schema(self, turn: Turn, format: str | None = None) -> dict[str, Any] | None:
        """The tool declaration for ``turn`` in a provider format, or ``None``
        when the tool is not offered. ``format`` is a registered format key
        (``"openai"``, ``"openai-strict"``, ``"openai-responses"``,
        ``"openai-responses-strict"``, ``"anthropic"``, ``"gemini"``,
        ``"neutral"``); by default the format of the turn's provider and model
        (the tool-format rule of the host guide). Raises ``ValidationError`` for
        an unknown key and ``UnknownProvider`` for a provider no rule knows."""
        instance_of(turn, Turn, "turn")
        with self._calls:  # the schema checks format, naming the keys
            return await schema.tool_schema(self.engine, turn, format)

    async def apply_tool_call(self, turn: Turn,
                              arguments: Mapping[str, object] | str) -> ToolResult:
        """Apply the model's ``update_short_term_memory`` call (its arguments as
        a mapping or the raw JSON string). Never raises for what the model
        sent: failures come back as a :class:`ToolResult` to hand to the model.
        A ``turn`` that is not a :class:`Turn` raises :class:`ValidationError`."""
        instance_of(turn, Turn, "turn")
        with self._calls, telemetry.span("stm.apply_tool_call") as span:
            result = await apply.apply_tool_call(self.engine, turn, arguments)
            telemetry.tool_call(result.ok, result.code)
            if span is not None:
                span.set_attributes({**self._turn_attributes(turn), "stm.ok": result.ok,
                                     "stm.code": result.code or "",
                                     "stm.items": len(result.written)})
        return result

    async def record_turn(self, turn: Turn, history: Sequence[HistoryMessage],
                          responses: Sequence[PersonaResponse], *,
                          stop_response: bool = False,
                          privacy_full: bool = False) -> RecordResult:
        """Post-turn effects: count the turn and keep the channel's last lines.

        ``history`` is the history window the host sent the model this turn
        (oldest first), not only the messages that are new since the last
        call: the stored lines become the last ones of ``history`` followed by
        ``responses``, and what was stored before is replaced.
        ``history`` and ``responses`` are lists of :class:`HistoryMessage` and
        :class:`PersonaResponse` (plain dicts raise :class:`ValidationError`).
        """
        _check_record_arguments(turn, history, responses, stop_response, privacy_full)
        with self._calls:
            if telemetry.tracer() is None:
                return await record.record_turn(self.engine, turn, history, responses,
                                                stop_response=stop_response,
                                                privacy_full=privacy_full)
            return await self._traced_record(turn, history, responses,
                                             stop_response=stop_response,
                                             privacy_full=privacy_full)

    #: The same function, named for what ``history`` is: the whole window the model saw.
    record_window = record_turn

    async def _traced_record(self, turn: Turn, window: Sequence[HistoryMessage],
                             responses: Sequence[PersonaResponse], *, stop_response: bool,
                             privacy_full: bool) -> RecordResult:
        tracer = telemetry.tracer()
        assert tracer is not None
        with tracer.start_as_current_span("stm.record_turn") as span:
            result = await record.record_turn(self.engine, turn, window, responses,
                                       stop_response=stop_response, privacy_full=privacy_full)
            span.set_attributes({**self._turn_attributes(turn),
                                 "stm.recorded": result.recorded,
                                 "stm.skipped_reason": result.skipped_reason or "",
                                 "stm.items": len(window) + len(responses)})
        return result

    @property
    def admin(self) -> Admin:
        """Settings, categories, prompts, privacy and memory edits."""
        self._calls.check_open()
        if self._admin is None:
            self._admin = Admin(self.engine)
        return self._admin

    @property
    def janitor(self) -> purging.Janitor:
        """Deletes rows untouched for ``janitor_retention_days``, in batches.

        After :meth:`aclose` a janitor the store had stays readable (stopped);
        none is made any more (:class:`StoreClosed`)."""
        if self._janitor is None:
            self._calls.check_open()
            self._janitor = purging.Janitor(self.engine)
        return self._janitor

    # -- moved to the engine: thin delegates for one release -------------------------
    def tool_already_used(self, turn: Turn) -> bool:
        _moved("tool_already_used")
        return self.engine.tool_already_used(turn)

    def mark_tool_used(self, turn: Turn) -> None:
        _moved("mark_tool_used")
        self.engine.mark_tool_used(turn)

    def warm_turn_state(self, server_id: str | None, user_id: str, now_ms: int | None = None
                        ) -> tuple[ServerProfile, UserView, MemoryView | None] | None:
        _moved("warm_turn_state")
        return self.engine.warm_turn_state(server_id, user_id, now_ms)

    async def server_settings(self, server_id: str) -> ServerSettings:
        _moved("server_settings")
        return await self.engine.server_settings(server_id)

    async def profile_for(self, server_id: str | None) -> ServerProfile:
        _moved("profile_for")
        return await self.engine.profile_for(server_id)

    async def servers_settings(self, server_ids: Iterable[str]) -> dict[str, ServerSettings]:
        _moved("servers_settings")
        return await self.engine.servers_settings(server_ids)

    async def server_memories(self, server_id: str) -> MemoryView:
        _moved("server_memories")
        return await self.engine.server_memories(server_id)

    async def user_view(self, user_id: str) -> UserView:
        _moved("user_view")
        return await self.engine.user_view(user_id)

    async def live_record(self, key: MemoryKey) -> MemoryRecord | None:
        _moved("live_record")
        return await self.engine.live_record(key)

    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        _moved("capture")
        return await self.engine.capture(writes)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        _moved("write_memory")
        return await self.engine.write_memory(writes)


def _moved(name: str) -> None:
    warnings.warn(f"Stm.{name} moved to the store's engine: use stm.engine.{name}",
                  DeprecationWarning, stacklevel=3)


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


def with_listen_url(settings: Settings, listen_url: object) -> Settings:
    """``settings`` with the listening connection's URL replaced (checked)."""
    if not isinstance(listen_url, str):
        raise ValidationError(f"listen_url must be a string, not {type(listen_url).__name__}",
                              field="listen_url",
                              allowed="a PostgreSQL URL, e.g. 'postgresql://stm@db:5432/stm'")
    return attrs.evolve(settings, listen_url=listen_url)


def open_store(url: str | None = None, *, settings: Settings | None = None,
               plugins: Iterable[object] = (), load_entrypoints: bool = True,
               plugin_manager: StmPluginManager | None = None,
               clock: Clock | None = None,
               start_janitor: bool = False,
               listen_for_changes: bool = True,
               listen_url: str | None = None) -> StoreOpening[Stm]:
    """Open stm on a database URL: ``await`` it, or use it as ``async with``::

        async with open_store("sqlite+aiosqlite:///bot.db") as stm:
            ...                                  # closed on leaving the block

        stm = await open_store("sqlite+aiosqlite:///bot.db")   # at start-up
        ...
        await stm.aclose()                                      # at shutdown

    :param url: e.g. ``sqlite+aiosqlite:///bot.db``,
        ``postgresql+asyncpg://user@host/db`` or ``memory://``; a bare path
        (``bot.db``) is a SQLite file. Defaults to ``settings.database_url``
        (``STM_DATABASE_URL``).
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
    async def open_() -> Stm:
        return await _open(url, settings=settings, plugins=plugins,
                           load_entrypoints=load_entrypoints, plugin_manager=plugin_manager,
                           clock=clock, start_janitor=start_janitor,
                           listen_for_changes=listen_for_changes, listen_url=listen_url)

    return StoreOpening(open_)


async def _open(url: str | None, *, settings: Settings | None, plugins: Iterable[object],
                load_entrypoints: bool, plugin_manager: StmPluginManager | None,
                clock: Clock | None, start_janitor: bool, listen_for_changes: bool,
                listen_url: str | None) -> Stm:
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
    except BaseException:
        await stm.aclose()
        raise
    stm._opened = True
    return stm
