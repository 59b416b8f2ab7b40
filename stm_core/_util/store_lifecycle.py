"""The life of an async store: opened by awaiting ``open_store()`` or by
entering it with ``async with``, closed once, and refusing calls after that.

Like ``aiosqlite.connect`` or ``asyncpg.create_pool``, what ``open_store()``
returns is both awaitable and an async context manager.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from stm_core.errors import StmError, StoreClosed

CLOSED_MESSAGE = "this store is closed; open a new one with open_store()"


class Closable(Protocol):
    async def aclose(self) -> None: ...


S = TypeVar("S", bound=Closable)


class CallGate:
    """Counts the store's calls in flight; refuses new ones once closing.

    A plain (not async) context manager, entered around each public call: a
    counter and a flag, cheap on the per-turn path.
    """

    __slots__ = ("_idle", "calls", "closing")

    def __init__(self) -> None:
        self.calls = 0
        self.closing = False
        self._idle: asyncio.Event | None = None

    def check_open(self) -> None:
        if self.closing:
            raise StoreClosed(CLOSED_MESSAGE)

    def __enter__(self) -> None:
        if self.closing:  # check_open, inline: this runs on every turn
            raise StoreClosed(CLOSED_MESSAGE)
        self.calls += 1

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.calls -= 1
        if not self.calls and self._idle is not None:
            self._idle.set()

    async def close(self) -> None:
        """Refuse new calls, then wait until the calls in flight have returned."""
        self.closing = True
        if self.calls:
            self._idle = asyncio.Event()
            await self._idle.wait()


class StoreOpening(Generic[S]):
    """What ``open_store()`` returns: ``await`` it for an open store (close
    it with ``aclose()``), or enter it with ``async with`` (closed on exit)."""

    def __init__(self, open_: Callable[[], Awaitable[S]]) -> None:
        self._open = open_
        self._used = False
        self._store: S | None = None

    def _start(self) -> Awaitable[S]:
        if self._used:
            raise StmError("this open_store() call was already awaited or entered; "
                           "call open_store() again for another store")
        self._used = True
        return self._open()

    def __await__(self) -> Generator[Any, None, S]:
        return self._start().__await__()

    async def __aenter__(self) -> S:
        self._store = await self._start()
        return self._store

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._store is not None:
            await self._store.aclose()
