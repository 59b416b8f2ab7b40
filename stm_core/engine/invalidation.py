"""Cross-process cache invalidation: hear other processes' writes.

Several processes (Discord shards, workers on several machines) can share one
PostgreSQL database, each with its own cache. Every write announces what it
changed with a ``NOTIFY`` inside its own transaction, so the notice goes out
exactly when the change commits (and never for a rollback). Each store keeps
one listening connection and applies what it hears:

* changed memory rows whose server or user view this process holds are read
  again (one point read each) and applied under the ``rev`` guard;
* changed settings or preferences drop that server's settings or that user's
  view, reloaded on next use;
* notices that name this process as the writer are skipped (its cache
  already holds what it wrote); an adapter may hand those on unparsed, as
  an origin-only notice.

PostgreSQL does not keep notices for a listener that was away, so whenever
the listening connection is (re)established the whole cache is dropped: what
was missed meanwhile is unknowable. A connection that dies silently (a hung
network: no error, no notices) is found by a check query: one every
``CHECK_PERIOD_SHARE`` of ``listener_check_seconds``, allowed
``CHECK_TIMEOUT_SHARE`` of it to answer, so a silent death is noticed within
80 % of ``listener_check_seconds``. The moment the connection is found dead
the whole cache is dropped, and until listening again no cached view is
served older than ``listener_check_seconds``; so a change another process
commits after the listener died shows here within ``listener_check_seconds``.
A dead connection is replaced with growing pauses. A safety expiry
(``cache_max_age_seconds``, 300 s by default while listening) bounds
staleness even if a notice were lost some other way.

A listener may connect and still hear nothing: behind a connection pooler in
transaction mode, LISTEN runs on a server connection that goes back to the
pool. So on every (re)connect the adapter sends a test notice through its
statement connections and waits a bounded time for it to come back
(``delivers_notices`` on the subscription). When it does not, one warning
names the cause and the fix (a direct ``listen_url``), and cached views are
kept no longer than ``unheard_cache_max_age_seconds`` (5 s by default)
instead of the 300 s meant for a working listener.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import attrs

from stm_core._util import telemetry
from stm_core.storage.protocol import ChangeFeed, Subscription
from stm_core.storage.records import ChangeNotice, MemoryKey

if TYPE_CHECKING:
    from stm_core.engine.core import Engine, Hearing

log = logging.getLogger("stm.invalidation")

#: Pauses between reconnection attempts grow up to this.
MAX_RETRY_PAUSE_S = 5.0
FIRST_RETRY_PAUSE_S = 0.05
#: Shares of ``listener_check_seconds`` between two checks of the listening
#: connection and given to one check. Together under 1, so a silent death is
#: found within the interval with room left for a busy event loop.
CHECK_PERIOD_SHARE = 0.4
CHECK_TIMEOUT_SHARE = 0.4


@attrs.define
class ListenerStats:
    """What the listener did (operators, tests)."""

    notices: int = 0
    own_notices: int = 0
    rows_refreshed: int = 0
    views_dropped: int = 0
    connects: int = 0
    connection_losses: int = 0
    failed_refreshes: int = 0


class InvalidationListener:
    """Keeps one subscription to the adapter's change feed and applies notices
    to the store's cache."""

    def __init__(self, engine: Engine, feed: ChangeFeed) -> None:
        self._engine = engine
        self._feed = feed
        self.stats = ListenerStats()
        self._subscription: Subscription | None = None
        self._lost = asyncio.Event()
        self._connected = asyncio.Event()
        self._pending: dict[MemoryKey, None] = {}
        self._wake_applier = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        telemetry.watch_listener(self)
        self._warned_unheard = False

    @property
    def connected(self) -> bool:
        return self._subscription is not None

    def staleness_bound_s(self) -> float | None:
        """The longest a cached view may now lag another process's write
        (``None``: no bound; the engine's :meth:`~stm_core.engine.core.Engine.max_view_age_ms`)."""
        max_age_ms = self._engine.max_view_age_ms(self._hearing())
        return None if max_age_ms is None else max_age_ms / 1000

    def _hearing(self) -> Hearing:
        if not self.connected:
            return "deaf"
        return "unheard" if self.hears_notices is False else "listening"

    @property
    def hears_notices(self) -> bool | None:
        """Whether the live subscription's self-check heard its test notice
        (``None``: not connected, or the adapter does not check)."""
        delivers = getattr(self._subscription, "delivers_notices", None)
        return delivers if isinstance(delivers, bool) else None

    @property
    def subscription(self) -> Subscription | None:
        """The live subscription (``None`` while reconnecting)."""
        return self._subscription

    async def start(self) -> None:
        """Connect once (quietly failing), then keep the connection alive in
        the background."""
        if not await self._connect():
            self._stop_trusting_cache()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._keep_alive(), name="stm-listener"),
                       loop.create_task(self._apply_rows(), name="stm-listener-apply")]

    async def wait_connected(self, timeout_s: float) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout_s)

    async def stop(self) -> None:
        self._stopping = True
        telemetry.unwatch_listener(self)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self._disconnect()

    # -- the connection -------------------------------------------------------------
    async def _connect(self) -> bool:
        self._lost.clear()
        try:
            subscription = await self._feed.subscribe(self._on_notice, self._on_lost)
        except Exception as exc:
            log.warning("cannot listen for other processes' writes (will retry): %s", exc)
            return False
        self._subscription = subscription
        self.stats.connects += 1
        # Listening again: whatever was announced while nobody listened is lost.
        self._engine.flush()
        self._engine.set_staleness(self._hearing())
        if self.hears_notices is False:
            self._warn_unheard()
        self._connected.set()
        if self.stats.connects > 1:
            telemetry.counts.listener_reconnects += 1
            log.info("listening for other processes' writes again; cache dropped")
        return True

    def _warn_unheard(self) -> None:
        if self._warned_unheard:
            return
        self._warned_unheard = True
        log.warning(
            "change notices do not reach this process: its listening connection did not "
            "hear its own test notice. The usual cause is a connection pooler in "
            "transaction mode (PgBouncer pool_mode=transaction) between stm and "
            "PostgreSQL, where LISTEN does not work. Fix: give the listener a direct URL "
            "to the database (STM_LISTEN_URL / open_store(listen_url=...)). Until then "
            "cached views are reloaded after %.1f s (STM_UNHEARD_CACHE_MAX_AGE_SECONDS), "
            "so other processes' changes show up that late.",
            self._engine.settings.unheard_cache_max_age_seconds)

    async def _disconnect(self) -> None:
        subscription, self._subscription = self._subscription, None
        self._connected.clear()
        if subscription is not None:
            with contextlib.suppress(Exception):
                await subscription.close()

    def _on_lost(self) -> None:
        if self._subscription is not None and not self._stopping:
            self._lost.set()

    def _stop_trusting_cache(self) -> None:
        """Nothing is heard any more: drop every cached view now, and until
        listening again let none get older than ``listener_check_seconds``."""
        self._engine.flush()
        self._engine.set_staleness("deaf")

    async def _keep_alive(self) -> None:
        interval = self._engine.settings.listener_check_seconds
        period, timeout = interval * CHECK_PERIOD_SHARE, interval * CHECK_TIMEOUT_SHARE
        pause = FIRST_RETRY_PAUSE_S
        while True:
            if self._subscription is None:
                if await self._connect():
                    pause = FIRST_RETRY_PAUSE_S
                else:
                    await asyncio.sleep(pause)
                    pause = min(MAX_RETRY_PAUSE_S, pause * 2)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), period)
            if not self._lost.is_set():
                try:
                    await self._subscription.check(timeout_s=timeout)
                    continue
                except Exception as exc:
                    log.warning("the listening connection stopped answering: %s",
                                exc or type(exc).__name__)
            self.stats.connection_losses += 1
            self._stop_trusting_cache()  # before closing, which may take a while
            log.warning("lost the connection that listens for other processes' writes; "
                        "reconnecting")
            await self._disconnect()

    # -- notices ------------------------------------------------------------------------
    def _on_notice(self, notice: ChangeNotice) -> None:
        self.stats.notices += 1
        if notice.origin == self._feed.instance_id:
            self.stats.own_notices += 1
            return
        if not notice.everything:
            self.stats.views_dropped += len(notice.servers) + len(notice.users)
        for key in self._engine.heard(notice):
            self._pending[key] = None
        if self._pending:
            self._wake_applier.set()

    async def _apply_rows(self) -> None:
        """Read each announced row again and apply it (one task, so rows of
        a burst are read one after another instead of all at once)."""
        while True:
            await self._wake_applier.wait()
            self._wake_applier.clear()
            while self._pending:
                key = next(iter(self._pending))
                del self._pending[key]
                await self._refresh(key)

    async def _refresh(self, key: MemoryKey) -> None:
        if not self._engine.holds(key):
            return
        try:
            await self._engine.reread(key)
        except Exception as exc:
            # The row's state is unknown: the engine dropped its view.
            self.stats.failed_refreshes += 1
            log.warning("cannot read a row another process changed (%s); dropping its view",
                        exc)
            return
        self.stats.rows_refreshed += 1
