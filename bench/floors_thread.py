"""The write floors built on stm's own mechanism, minus stm.

:class:`InlineWriter` runs the SQL below on the caller's own thread, one
transaction per write and no hop at all, the way stm's SQLite adapter writes
for a lone caller (``STM_SQLITE_INLINE_WRITES``); :class:`InlineToolWriter`
does the same with the tool write.

:class:`ThreadWriter` is stdlib ``sqlite3`` on one dedicated thread, the way
stm's SQLite adapter writes under concurrent callers, with nothing else: a caller puts a job on a
queue and awaits a future the thread settles with ``call_soon_threadsafe``
(one hop per turn). The thread drains whatever is queued and commits it as
one transaction, so with one caller at a time it commits every turn alone and
with many callers it is a plain group-commit writer. It runs the very SQL
text stm compiled for the capture upsert (taken from an stm store on the same
file), with the same pragmas and the same WAL checkpoint policy (automatic
checkpoints off on the writer, ``journal_size_limit`` as stm's writer sets
it; looked at every 64 writes, ``PASSIVE`` checkpoints on a second connection
until caught up once the WAL grew by 4 MiB, one on the writer between two
batches when the second connection fell behind, and one on the writer
before its next write once the WAL passed 16 MiB, waiting for the second
connection's if it still runs).

:class:`ThreadToolWriter` is the same writer running stm's summary tool write
instead: per scope the memory upsert, the revision insert and the trim of old
revisions, the very SQL stm compiled for them, one transaction per call.

:class:`RawAsyncpg` sends stm's single PostgreSQL statement (both upserts and
the change notice in one statement) on one plain asyncpg connection.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from bench import workload as w
from bench.floors import CRUDE_TTL_MS, SUMMARY_TTL_MS, guild_keys
from stm_core.models import HistoryMessage, PersonaResponse
from stm_core.settings import Settings
from stm_plugins.sqlalchemy_storage.sqlite_adapter import (
    BUSY_TIMEOUT_MS,
    WAL_SIZE_LIMIT,
    WRITER_CHECKPOINT_WAL_BYTES,
    WalGrowth,
    passive_checkpoint,
)
from stm_plugins.sqlalchemy_storage.sqlite_worker import LoopHold, checkpoint_waiting

#: How often the WAL size is looked at (writes), as stm's adapter does.
CHECKPOINT_CHECK_EVERY = 64
#: Revisions a row keeps, as stm's default settings make it keep (the newest
#: ``memory_history_revisions`` before the current one, and the current one).
REVISIONS_KEPT = Settings().memory_history_revisions + 1
_STOP = None
_Job = tuple[list[dict[str, Any]], asyncio.AbstractEventLoop, "asyncio.Future[list[Any]]"]
#: What the thread's queue carries: a job, the jobs of one loop pass, or the stop.
_Item = _Job | list[_Job] | None


def capture_params(server: str, channel: str, user: str, payload: str,
                   now_ms: int) -> list[dict[str, Any]]:
    """The two capture rows of a guild turn, as stm binds them."""
    return [{"scope_kind": k[0], "server_id": k[1], "user_id": k[2], "channel_id": k[3],
             "persona_id": k[4], "parent_channel_id": None, "persona_lineage_id": w.LINEAGE_ID,
             "messages": payload, "inc": inc, "now": now_ms, "crude_ttl": CRUDE_TTL_MS,
             "summary_ttl": SUMMARY_TTL_MS}
            for k, inc in zip(guild_keys(server, channel, user), (1, 0), strict=True)]


def connect(path: str, synchronous: str = "NORMAL") -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                           timeout=BUSY_TIMEOUT_MS / 1000, cached_statements=256)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


class ThreadWriter:
    """One thread, one connection, one commit per batch of queued turns."""

    def __init__(self, path: str, capture_sql: str) -> None:
        self.path = path
        self.sql = capture_sql
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._writes = 0
        self._checkpoint: asyncio.Future[Any] | None = None
        self._wal_growth = WalGrowth()
        self._writer_checkpoint = threading.Event()
        self.batches = 0
        #: Column names of the rows the upsert returns (known after the first write).
        self.columns: tuple[str, ...] = ()

    def start(self) -> ThreadWriter:
        conn = connect(self.path)
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        self._thread = threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                        name="floor-sqlite-writer")
        self._thread.start()
        return self

    async def record(self, server: str, channel: str, user: str,
                     hist: Sequence[HistoryMessage], resp: Sequence[PersonaResponse],
                     now_ms: int) -> list[Any]:
        payload = w.messages_payload(hist, resp, now_ms)
        return await self.write(capture_params(server, channel, user, payload, now_ms))

    async def write(self, rows: list[dict[str, Any]]) -> list[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        self._submit((rows, loop, future))
        result = await future
        self._writes += 1
        if self._writes % CHECKPOINT_CHECK_EVERY == 0:
            self._maybe_checkpoint()
        return result

    def _submit(self, job: _Job) -> None:
        """Hand a write to the thread: at once (the thread wakes for it)."""
        self._queue.put(job)

    def _maybe_checkpoint(self) -> None:
        try:
            wal = os.stat(self.path + "-wal").st_size
        except OSError:
            return
        if wal >= WRITER_CHECKPOINT_WAL_BYTES:
            # As stm's writer: it finishes the checkpoint before its next write.
            self._writer_checkpoint.set()
            return
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        if self._wal_growth.due(wal):
            self._checkpoint = asyncio.ensure_future(asyncio.to_thread(self._passive))

    def _passive(self) -> None:
        conn = connect(self.path)
        try:
            caught_up = passive_checkpoint(conn)
        finally:
            conn.close()
        if not caught_up:  # the writer finishes the tail, as stm's does
            self._writer_checkpoint.set()

    def _writer_checkpoints(self, conn: sqlite3.Connection) -> None:
        """The tail the writer finishes before its next write, when asked."""
        if self._writer_checkpoint.is_set():
            self._writer_checkpoint.clear()
            checkpoint_waiting(conn, 60.0)

    def _serve(self, conn: sqlite3.Connection) -> None:
        sql = self.sql
        while True:
            self._writer_checkpoints(conn)
            job = self._queue.get()
            if job is _STOP:
                conn.close()
                return
            batch = _jobs(job)
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _STOP:
                    self._queue.put(_STOP)
                    break
                batch += _jobs(more)
            self.batches += 1
            loop = batch[0][1]  # type: ignore[index]
            try:
                conn.execute("BEGIN IMMEDIATE")
                done = [(fut, [self._upsert(conn, sql, p) for p in rows])
                        for rows, _loop, fut in batch]  # type: ignore[misc]
                conn.execute("COMMIT")
            except Exception as exc:  # a floor that fails must say so, not hang
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                loop.call_soon_threadsafe(_fail, [job[2] for job in batch], exc)  # type: ignore[index]
                continue
            loop.call_soon_threadsafe(_settle, done)

    def _upsert(self, conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> Any:
        cursor = conn.execute(sql, params)
        row = cursor.fetchall()[0]
        if not self.columns:
            self.columns = tuple(d[0] for d in cursor.description)
        return row

    async def close(self) -> None:
        if self._checkpoint is not None:
            await asyncio.wait([self._checkpoint])
        if self._thread is not None:
            self._queue.put(_STOP)
            await asyncio.to_thread(self._thread.join)
            self._thread = None


class PassBatchingWriter(ThreadWriter):
    """The group-commit floor that batches best: the writes made in one pass
    of the event loop reach the thread together (one put, one wake-up, one
    transaction). :class:`ThreadWriter` hands each write over as it is made,
    and the thread, woken by the first, often commits before the rest of the
    pass's callers have queued theirs."""

    _outbox: list[_Job]

    def start(self) -> PassBatchingWriter:
        self._outbox = []
        super().start()
        return self

    def _submit(self, job: _Job) -> None:
        if not self._outbox:
            job[1].call_soon(self._flush)
        self._outbox.append(job)

    def _flush(self) -> None:
        jobs, self._outbox = self._outbox, []
        self._queue.put(jobs)


def _jobs(item: _Item) -> list[_Job]:
    return item if isinstance(item, list) else [item]  # type: ignore[list-item]


class InlineWriter(ThreadWriter):
    """:class:`ThreadWriter`'s SQL, pragmas and checkpoint policy on the
    caller's thread: ``BEGIN IMMEDIATE``, the upserts, ``COMMIT``, no queue,
    future or thread. The rare checkpoint tail the writer finishes itself
    (past 16 MiB of WAL) runs before the next write, on the same thread.
    While the loop has callbacks ready (the checkpoint's, on another
    thread, or a host's other tasks) it holds them for one write per pass
    of the loop, stm's own rule (``LoopHold``), and lets them run before
    the next, as stm's writer then hands its write to its thread: writes
    that never suspend would starve them."""

    _conn: sqlite3.Connection
    _hold: LoopHold

    def start(self) -> InlineWriter:
        conn = connect(self.path)
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        self._conn = conn
        self._hold = LoopHold()
        return self

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection the writes run on (the caller's thread uses it)."""
        return self._conn

    async def write(self, rows: list[dict[str, Any]]) -> list[Any]:
        if not self._hold.may_hold(asyncio.get_running_loop()):
            await asyncio.sleep(0)
        conn, sql = self._conn, self.sql
        self._writer_checkpoints(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = [self._upsert(conn, sql, p) for p in rows]
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._writes += 1
        if self._writes % CHECKPOINT_CHECK_EVERY == 0:
            self._maybe_checkpoint()
        return result

    async def close(self) -> None:
        if self._checkpoint is not None:
            await asyncio.wait([self._checkpoint])
        self._conn.close()


def _fail(futures: list[asyncio.Future[list[Any]]], exc: Exception) -> None:
    for future in futures:
        future.set_exception(exc)


def _settle(done: list[tuple[asyncio.Future[list[Any]], list[Any]]]) -> None:
    for future, rows in done:
        future.set_result(rows)


def tool_write_params(server: str, channel: str, user: str, summary: str, now_ms: int,
                      constants: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The two scopes of a guild summary write, as stm binds them: the live
    row's counter resets; one dict per scope serves its upsert, revision and trim."""
    return [{**constants, "scope_kind": k[0], "server_id": k[1], "user_id": k[2],
             "channel_id": k[3], "persona_id": k[4], "parent_channel_id": None,
             "persona_lineage_id": w.LINEAGE_ID, "summary": summary, "categories": "{}",
             "set_summary": 1, "set_categories": 0, "clear_messages": 0, "reset": reset,
             "now": now_ms, "crude_ttl": CRUDE_TTL_MS, "summary_ttl": SUMMARY_TTL_MS,
             "author": "model", "actor": None, "restored_from": None,
             "keep": REVISIONS_KEPT}
            for k, reset in zip(guild_keys(server, channel, user), (1, 0), strict=True)]


class ThreadToolWriter(ThreadWriter):
    """The tool write on :class:`ThreadWriter`'s thread, queue and checkpoint
    policy: per scope the summary upsert stm compiled (returning the row), then
    stm's revision insert and trim, all scopes in one transaction."""

    def __init__(self, path: str, upsert_sql: str, revision_sql: Sequence[str],
                 constants: Mapping[str, Any]) -> None:
        super().__init__(path, upsert_sql)
        self.revision_sql = tuple(revision_sql)
        self.constants = dict(constants)

    async def write_summary(self, server: str, channel: str, user: str, summary: str,
                            now_ms: int) -> list[Any]:
        return await self.write(tool_write_params(server, channel, user, summary, now_ms,
                                                   self.constants))

    def _upsert(self, conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> Any:
        row = super()._upsert(conn, sql, params)
        for statement in self.revision_sql:
            conn.execute(statement, params)
        return row


class InlineToolWriter(InlineWriter, ThreadToolWriter):
    """:class:`ThreadToolWriter`'s write on the caller's thread (see :class:`InlineWriter`)."""


class RawAsyncpg:
    """stm's one capture statement on one asyncpg connection (no pool)."""

    def __init__(self, dsn: str, schema: str, sql: str, names: Sequence[tuple[int, str]],
                 constants: dict[str, Any]) -> None:
        self.dsn = dsn
        self.schema = schema
        self.sql = sql
        self.slots = tuple(names)
        self.constants = constants
        self._conn: Any = None

    async def open(self) -> RawAsyncpg:
        import asyncpg

        self._conn = await asyncpg.connect(self.dsn,
                                           server_settings={"search_path": self.schema})
        return self

    async def record(self, server: str, channel: str, user: str,
                     hist: Sequence[HistoryMessage], resp: Sequence[PersonaResponse],
                     now_ms: int) -> list[Any]:
        payload = w.messages_payload(hist, resp, now_ms)
        rows = capture_params(server, channel, user, payload, now_ms)
        args = [rows[r][n] if r >= 0 else self.constants[n] for r, n in self.slots]
        result: list[Any] = await self._conn.fetch(self.sql, *args)
        return result

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
