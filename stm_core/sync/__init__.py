"""The synchronous facade, for hosts that are not async (Flask, Django views,
scripts): ``open_store_sync`` gives a :class:`SyncStm` whose methods block.

It runs one event loop of its own in a daemon thread and the ordinary async
store inside it, so behaviour is exactly the async API's: every call is the
async method, run on that loop, and waited for. Any number of threads may
call one ``SyncStm`` at once; their calls interleave on the loop as
concurrent tasks would. Exceptions are the async API's, re-raised in the
calling thread.

Like :func:`sqlite3.connect` or ``httpx.Client``, the store is open once
``open_store_sync`` returns: use it in a ``with`` block, or keep it and call
:meth:`SyncStm.close` at exit::

    with open_store_sync("sqlite+aiosqlite:///bot.db") as stm:
        ctx = stm.build_context(turn)

    stm = open_store_sync("sqlite+aiosqlite:///bot.db")   # at start-up
    ...
    stm.close()                                            # at exit
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from stm_core.errors import StoreClosed
from stm_core.models import (
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    StmContext,
    ToolResult,
    Turn,
)
from stm_core.store import Stm
from stm_core.sync.admin import SyncAdmin
from stm_core.sync.session import CLOSED_MESSAGE, SyncSession

__all__ = ["SyncAdmin", "SyncStm", "open_store_sync"]

T = TypeVar("T")


class SyncStm:
    """A store whose per-turn and admin calls block. Build it with
    :func:`open_store_sync`; the async store is ``.store``. Close it with
    :meth:`close` or by leaving a ``with`` block; a store never closed is
    closed when it is garbage-collected, with a :class:`ResourceWarning`."""

    def __init__(self, session: SyncSession) -> None:
        self._session = session
        #: The admin calls (:class:`stm_core.admin.api.Admin`'s), blocking.
        self.admin = SyncAdmin(session)

    @property
    def store(self) -> Stm:
        """The async store underneath (for calls the facade does not wrap)."""
        return self._session.store

    @property
    def closed(self) -> bool:
        return self._session.closed

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of the store's on its loop and wait for it."""
        return self._session.run(coro)

    def close(self) -> None:
        """Close the store and stop its loop thread. Idempotent, and safe from
        any thread but the store's own loop; later calls raise
        :class:`~stm_core.errors.StoreClosed`."""
        self._session.close()

    def __enter__(self) -> SyncStm:
        if self._session.closed:
            raise StoreClosed(CLOSED_MESSAGE)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        session = getattr(self, "_session", None)  # absent if __init__ never ran
        if session is None or session.closed:
            return
        warnings.warn(f"unclosed {self!r}: call close() or use it in a with block",
                      ResourceWarning, source=self, stacklevel=2)
        with contextlib.suppress(Exception):  # nothing may escape __del__; it warned
            session.close()

    def __repr__(self) -> str:
        state = "closed" if self._session.closed else "open"
        return f"<SyncStm {state}>"

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


def open_store_sync(url: str | None = None, **kwargs: Any) -> SyncStm:
    """:func:`stm_core.open_store` for synchronous code: same arguments, an
    open, blocking :class:`SyncStm`. Close it with ``close()`` or use it as a
    context manager (the store and its loop thread close on exit)."""
    return SyncStm(SyncSession(url, kwargs))
