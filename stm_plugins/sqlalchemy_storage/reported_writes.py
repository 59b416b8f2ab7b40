"""Writes that report their outcome, run where the caller cannot cancel them.

The store mirrors each memory write into its cache and must not fall behind
the database when the caller is cancelled mid-write (see
:class:`stm_core.storage.protocol.ReportedWrites`). So the write runs in a
task of its own, which tells ``report`` the outcome and then wakes the
caller through a plain future: a cancelled caller stops waiting, while the
write goes on and still reports. The store would otherwise wrap each write in
a task and an ``asyncio.shield`` itself, which costs one more event-loop pass
per write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger("stm.storage.postgres")

T = TypeVar("T")


class ReportedWriter:
    """Runs writes in tasks of their own and keeps them referenced until done."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        """Writes started and not finished (their callers may be gone)."""
        return len(self._running)

    async def run(self, write: Coroutine[Any, Any, T],
                  report: Callable[[T | None], None] | None) -> T:
        """``write``'s result; ``report`` (unless ``None``) is called with it,
        or with ``None`` when it raised, before the caller resumes, and also
        when the caller was cancelled meanwhile."""
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[T] = loop.create_future()
        self._running.add(loop.create_task(self._settle(write, report, outcome)))
        return await outcome

    async def _settle(self, write: Coroutine[Any, Any, T],
                      report: Callable[[T | None], None] | None,
                      outcome: asyncio.Future[T]) -> None:
        try:
            value = await write
        except asyncio.CancelledError:  # only when the loop itself shuts down
            _tell(report, None, outcome)
            outcome.cancel()
            raise
        except BaseException as exc:
            _tell(report, None, outcome)
            if not outcome.done():
                outcome.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._running.discard(task)
        error = _tell(report, value, outcome)
        if outcome.done():  # the caller was cancelled; the write still happened
            return
        if error is None:
            outcome.set_result(value)
        else:
            outcome.set_exception(error)


def _tell(report: Callable[[T | None], None] | None, value: T | None,
          outcome: asyncio.Future[T]) -> Exception | None:
    """Call ``report``; what it raised goes to the caller, or to the log when
    the caller is gone."""
    if report is None:
        return None
    try:
        report(value)
    except Exception as exc:
        if outcome.done():
            log.exception("reporting a write's outcome failed")
        return exc
    return None
