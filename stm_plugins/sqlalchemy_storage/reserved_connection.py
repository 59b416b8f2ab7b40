"""One pooled connection kept checked out between calls.

Taking a connection from an asyncpg pool and giving it back costs about as
much client CPU as sending a turn's statement: a timeout scope and a future to
take it; a shielded task (one more event-loop pass), another timeout scope, a
reset and a re-armed idle timer to give it back. So the PostgreSQL adapter
keeps one connection of its pool out between calls and runs a call on it
whenever it is free. A call that finds it busy (concurrent callers) takes one
from the pool as before.

The connection stays the pool's: the pool opened it, counts it against its
size and takes it back like any other, so its rules still hold:

* a call on it that raises gives it back (asyncpg's release waits out a
  cancelled query, rolls back, and drops the connection when that fails); the
  next pooled call's connection is kept instead;
* a connection that dies while kept (a database restart) is detached by
  asyncpg, which returns its slot to the pool; the next call notices and goes
  through the pool, which reconnects;
* every ``RECYCLE_AFTER`` calls it goes back to the pool once, so the pool's
  own limits (``max_queries``, expired connections) reach it too;
* closing gives it back before the pool closes, after a call in flight.

A pool of one connection keeps none: a kept connection would starve callers
waiting on the pool.
"""

from __future__ import annotations

from typing import Any

import asyncpg

#: Calls on the kept connection before it goes back to the pool once.
RECYCLE_AFTER = 10_000


class ReservedConnection:
    """The kept connection of one pool, lent to one call at a time."""

    def __init__(self, pool: Any, release_timeout_s: float) -> None:
        self.pool = pool
        self._release_timeout = release_timeout_s
        self._conn: Any = None
        self._busy = False
        self._uses = 0
        self._closing = False

    @property
    def connection(self) -> Any:
        """The kept connection (``None``: none kept now)."""
        return self._conn

    def take(self) -> Any:
        """The kept connection, now lent out; ``None`` when none is free."""
        conn = self._conn
        if conn is None or self._busy:
            return None
        if not _alive(conn):
            self._conn = None  # asyncpg already gave its slot back to the pool
            return None
        self._busy = True
        return conn

    def keep(self, conn: Any) -> bool:
        """After a call on ``conn`` succeeded: whether it is kept (the lent one
        comes back, or a pooled one fills the empty place); if not, the caller
        gives it back to the pool."""
        if conn is self._conn:
            self._busy = False
            self._uses += 1
            if self._uses < RECYCLE_AFTER and _reusable(conn) and not self._closing:
                return True
            self._conn = None
            return False
        if self._conn is None and not self._closing and _reusable(conn):
            self._conn, self._uses = conn, 0
            return True
        return False

    def forget(self, conn: Any) -> None:
        """After a call on ``conn`` raised: it goes back to the pool, not here."""
        if conn is self._conn:
            self._conn, self._busy = None, False

    async def give_back(self, conn: Any) -> None:
        await self.pool.release(conn, timeout=self._release_timeout)

    async def close(self) -> None:
        """Keep nothing from now on; give the kept connection back unless a
        call has it (that call gives it back when it ends)."""
        self._closing = True
        conn, busy = self._conn, self._busy
        if conn is not None and not busy:
            self._conn = None
            await self.give_back(conn)


def _alive(conn: Any) -> bool:
    try:
        return not conn.is_closed()
    except asyncpg.InterfaceError:  # detached: the connection died and left the pool's slot
        return False


def _reusable(conn: Any) -> bool:
    """Nothing left open: every stm call ends its transaction, but a kept
    connection gets no reset, so this is checked rather than assumed. (A
    closed one is noticed when it is next taken.)"""
    try:
        return not conn.is_in_transaction()
    except asyncpg.InterfaceError:  # detached meanwhile
        return False
