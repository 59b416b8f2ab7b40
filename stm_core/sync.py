"""The synchronous facade, for hosts that are not async (Flask, Django views,
scripts): ``open_store_sync`` gives a :class:`SyncStm` whose methods block.

It runs one event loop of its own in a daemon thread and the ordinary async
store inside it, so behaviour is exactly the async API's: every call is the
async method, run on that loop, and waited for. Any number of threads may
call one ``SyncStm`` at once; their calls interleave on the loop as
concurrent tasks would. Exceptions are the async API's, re-raised in the
calling thread.

    with open_store_sync("sqlite+aiosqlite:///bot.db") as stm:
        ctx = stm.build_context(turn)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, TypeVar

from stm_core.errors import StmError, StoreClosed
from stm_core.models import (
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    StmContext,
    ToolResult,
    Turn,
)
from stm_core.store import Stm, open_store

T = TypeVar("T")


class _LoopThread:
    """An event loop running forever in a daemon thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever,
                                        name="stm-sync-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise StmError("a SyncStm method was called from inside its own event loop "
                           "(e.g. from a plugin); use the async store there")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class SyncAdmin:
    """``stm.admin`` with blocking methods: each admin coroutine method,
    called with the same arguments, waited for."""

    def __init__(self, sync: SyncStm) -> None:
        self._sync = sync

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._sync.store.admin, name)
        if not asyncio.iscoroutinefunction(method):
            raise AttributeError(f"stm.admin.{name} is not an admin call")

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._sync.run(method(*args, **kwargs))

        call.__doc__ = method.__doc__
        return call


class SyncStm:
    """A store whose per-turn and admin calls block. Build it with
    :func:`open_store_sync`; the async store is ``.store``."""

    def __init__(self, store: Stm, loop: _LoopThread) -> None:
        self.store = store
        self._loop = loop
        self._closed = False
        self.admin = SyncAdmin(self)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of the store's on its loop and wait for it."""
        if self._closed:
            coro.close()
            raise StoreClosed("this store is closed; open a new one with open_store_sync()")
        return self._loop.run(coro)

    def build_context(self, turn: Turn) -> StmContext:
        return self.run(self.store.build_context(turn))

    def tool_available(self, turn: Turn) -> bool:
        return self.run(self.store.tool_available(turn))

    def tool_schema(self, turn: Turn, format: str | None = None) -> dict[str, Any] | None:
        return self.run(self.store.tool_schema(turn, format))

    def apply_tool_call(self, turn: Turn, arguments: Mapping[str, object] | str) -> ToolResult:
        return self.run(self.store.apply_tool_call(turn, arguments))

    def record_window(self, turn: Turn, window: Sequence[HistoryMessage],
                      responses: Sequence[PersonaResponse], *, stop_response: bool = False,
                      privacy_full: bool = False) -> RecordResult:
        return self.run(self.store.record_window(turn, window, responses,
                                                 stop_response=stop_response,
                                                 privacy_full=privacy_full))

    def record_turn(self, turn: Turn, history: Sequence[HistoryMessage],
                    responses: Sequence[PersonaResponse], *, stop_response: bool = False,
                    privacy_full: bool = False) -> RecordResult:
        return self.record_window(turn, history, responses, stop_response=stop_response,
                                  privacy_full=privacy_full)

    def run_janitor(self) -> int:
        """Run the janitor now; the number of rows it deleted."""
        return self.run(self.store.janitor.run_once())

    def _mark_closed(self) -> None:
        self._closed = True


@contextmanager
def open_store_sync(url: str | None = None, **kwargs: Any) -> Iterator[SyncStm]:
    """:func:`stm_core.open_store` for synchronous code: same arguments, a
    blocking :class:`SyncStm`. The store and its loop thread close on exit."""
    loop = _LoopThread()
    try:
        manager: AbstractAsyncContextManager[Stm] = open_store(url, **kwargs)
        store = loop.run(manager.__aenter__())
    except BaseException:
        loop.stop()
        raise
    sync = SyncStm(store, loop)
    try:
        yield sync
    finally:
        sync._mark_closed()
        try:
            loop.run(manager.__aexit__(None, None, None))
        finally:
            loop.stop()
