"""Awaiting a coroutine that outlives its caller's cancellation.

A write must finish (and its rows reach the cache) even when the caller that
asked for it is cancelled. ``asyncio.shield(ensure_future(coro))`` does that
with a Task, a shield future and three extra event-loop callbacks on every
write. :class:`Detachable` runs the coroutine in the caller's own task
instead, and only when the caller is cancelled does the rest of it move to a
task of its own (:attr:`Detachable.detached`).

The caller's task never waits on the coroutine's futures directly (a
cancelled task cancels the future it waits on): it waits on a plain future
that is settled when the coroutine's future is done, and the coroutine then
reads the outcome from its own future, untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _wake(proxy: asyncio.Future[None]) -> Any:
    def done(_: object) -> None:
        if not proxy.done():
            proxy.set_result(None)
    return done


class Detachable(Generic[T]):
    """``await Detachable(coro)``: ``await coro``, except that cancelling the
    awaiting task leaves ``coro`` running in :attr:`detached` (the caller
    still gets its ``CancelledError``)."""

    __slots__ = ("_coro", "detached")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._coro = coro
        #: The task finishing ``coro`` after the caller was cancelled.
        self.detached: asyncio.Task[T] | None = None

    def __await__(self) -> Generator[Any, None, T]:
        coro = self._coro
        while True:
            try:
                waited = coro.send(None)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            try:
                if waited is None:  # a bare yield (``asyncio.sleep(0)``)
                    yield None
                    continue
                waited._asyncio_future_blocking = False
                proxy: asyncio.Future[None] = waited.get_loop().create_future()
                waited.add_done_callback(_wake(proxy))
                yield from proxy
            except asyncio.CancelledError:
                self.detached = asyncio.get_running_loop().create_task(
                    _finish(coro, waited))
                raise
            except GeneratorExit:
                coro.close()
                raise


async def _finish(coro: Coroutine[Any, Any, T], waited: asyncio.Future[Any] | None) -> T:
    """The rest of ``coro``, which is suspended waiting on ``waited``."""
    if waited is not None and not waited.done():
        proxy: asyncio.Future[None] = waited.get_loop().create_future()
        waited.add_done_callback(_wake(proxy))
        await proxy
    return await _Resumed(coro)


class _Resumed(Generic[T]):
    """A suspended coroutine whose awaited future is done, driven on."""

    __slots__ = ("_coro",)

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self._coro = coro

    def __await__(self) -> Generator[Any, None, T]:
        coro = self._coro
        thrown: BaseException | None = None
        while True:
            try:
                waited = coro.send(None) if thrown is None else coro.throw(thrown)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            thrown = None
            try:
                yield waited
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # this task cancelled (the loop closing)
                thrown = exc
