"""The life of a synchronous store: an async store opened on an event loop
that runs in a daemon thread of its own, every call run there and waited for,
and one close that ends both (idempotent, from any thread but the loop's).
:class:`stm_core.sync.SyncStm` and its admin share one session."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from stm_core.errors import StmError, StoreClosed
from stm_core.store import Stm, open_store

T = TypeVar("T")

CLOSED_MESSAGE = "this store is closed; open a new one with open_store_sync()"


class LoopThread:
    """An event loop running forever in a daemon thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever,
                                        name="stm-sync-loop", daemon=True)
        self._thread.start()

    def is_current(self) -> bool:
        return threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.is_current():
            coro.close()
            raise StmError("a SyncStm method was called from inside its own event loop "
                           "(e.g. from a plugin); use the async store there")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class SyncSession:
    """An open async store on its loop thread, until :meth:`close`."""

    def __init__(self, url: str | None, kwargs: dict[str, Any]) -> None:
        self._loop = LoopThread()
        try:
            self._manager: AbstractAsyncContextManager[Stm] = open_store(url, **kwargs)
            self.store: Stm = self._loop.run(self._manager.__aenter__())
        except BaseException:
            self._loop.stop()
            raise
        self._closed = False
        self._close_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the store's loop and wait for it."""
        if self._closed:
            coro.close()
            raise StoreClosed(CLOSED_MESSAGE)
        return self._loop.run(coro)

    def close(self) -> None:
        """Close the store, then stop its loop. A second call does nothing;
        calls made afterwards raise :class:`StoreClosed`."""
        if self._loop.is_current():
            raise StmError("a SyncStm was closed from inside its own event loop "
                           "(e.g. from a plugin); close it from the host's code")
        with self._close_lock:  # a concurrent close waits for the first to finish
            if self._closed:
                return
            self._closed = True
            try:
                self._loop.run(self._manager.__aexit__(None, None, None))
            finally:
                self._loop.stop()
