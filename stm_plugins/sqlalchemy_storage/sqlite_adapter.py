"""SQLite storage on the stdlib ``sqlite3`` driver: one writer thread doing group
commit (a lone write runs on the caller's thread instead, see
:mod:`.sqlite_worker`), one reader thread (WAL lets it read while the writer
writes).

Every connection sets ``journal_mode=WAL``, ``synchronous`` (NORMAL by default:
durable across application crashes, the last commits may be lost on power
loss; FULL via ``STM_SQLITE_SYNCHRONOUS``), ``busy_timeout=5000`` (the
writer's is 0 while it may run writes on the caller's thread) and
``foreign_keys=ON``. Transactions are started explicitly (the driver's own
transaction handling is off), writes with ``BEGIN IMMEDIATE`` so a write never
fails half-way for a lock.

An in-memory database (``:memory:``) lives in the writer's connection, so reads
go through the writer thread too.

Memory writes report their outcome (:class:`~stm_core.storage.protocol.ReportedWrites`):
the writer thread also turns the returned rows into records, and the store is
told them on the event loop when the batch commits, whether or not the caller
still waits. No task or shield per write is needed to keep the cache in step.

WAL checkpoints do not run inside the writer's commits (SQLite's automatic
checkpoint would make the unlucky commit wait for it, tens of milliseconds on
a large write): the writer's ``wal_autocheckpoint`` is off, and once the WAL
file passes ``CHECKPOINT_WAL_BYTES`` ``PASSIVE`` checkpoints run on the reader
thread, beside the writer, until they have copied the frames written
meanwhile too; the writer's next transaction then starts the WAL over, and
its commit cuts the file back to ``WAL_SIZE_LIMIT`` (``journal_size_limit``),
so its size keeps telling how much the WAL holds. That needs the writer to
start a transaction while every frame is copied: a writer that commits
between the reader's last checkpoint and its next transaction keeps the WAL
growing. The writer then finishes the tail itself when its queue is next
empty. Once the file has passed four times the threshold (the reader could
not keep up: a slow disk, writes that never pause), the writer finishes the
checkpoint before its next write, waiting for the reader's if one still runs:
that holds every turn write queued behind it for a few fsyncs, so it runs as
seldom as it can, but the WAL stays within that size and the writes between
two looks at it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from stm_core._util import telemetry
from stm_core.errors import ConfigurationError
from stm_core.settings import Settings
from stm_core.storage.protocol import WriteReport
from stm_core.storage.records import CaptureWrite, MemoryRecord, MemoryWrite, SchemaStatus
from stm_plugins.sqlalchemy_storage import migrations as mig
from stm_plugins.sqlalchemy_storage.base import (
    Finish,
    SqlStorageAdapter,
    Step,
    Want,
    capture_upsert,
)
from stm_plugins.sqlalchemy_storage.compiled import Compiled, dialect_named
from stm_plugins.sqlalchemy_storage.sqlite_precompiled import (
    ADD_VERSION,
    HAS_VERSION_TABLE,
    MAX_VERSION,
    STATEMENTS,
)
from stm_plugins.sqlalchemy_storage.sqlite_purge import SlicedPurge, purge_in_slices
from stm_plugins.sqlalchemy_storage.sqlite_worker import Report, SqliteWorker, is_busy
from stm_plugins.sqlalchemy_storage.urls import SqliteTarget

T = TypeVar("T")

log = logging.getLogger("stm.storage.sqlite")

BUSY_TIMEOUT_MS = 5000
#: About SQLite's default autocheckpoint of 1000 pages of 4 KiB.
CHECKPOINT_WAL_BYTES = 4 * 1024 * 1024
#: Writes between two looks at the WAL file's size.
CHECKPOINT_CHECK_EVERY = 64
#: The WAL file is cut back to this when SQLite starts it over. Without it the
#: file keeps its largest size, so it would look due for a checkpoint at every
#: look once it had passed ``CHECKPOINT_WAL_BYTES``.
WAL_SIZE_LIMIT = CHECKPOINT_WAL_BYTES // 2
#: Past this, the writer finishes a checkpoint's tail between two batches.
WRITER_CHECKPOINT_WAL_BYTES = 4 * CHECKPOINT_WAL_BYTES
#: Checkpoints the reader runs in a row to copy the frames written meanwhile.
CATCH_UP_PASSES = 4
#: Memory writes of at most this many rows may run inline (on the caller's
#: thread, see :mod:`.sqlite_worker`): a turn's or a tool's two rows a persona;
#: anything larger always goes to the writer thread.
INLINE_MAX_ROWS = 8


class WalGrowth:
    """When a checkpoint is due: once the WAL file has grown by
    ``CHECKPOINT_WAL_BYTES`` since the last one started, or since the file was
    cut back (it only shrinks when the WAL starts over)."""

    def __init__(self) -> None:
        #: The file's size when the last checkpoint started (0 once cut back).
        self.checkpointed_at = 0

    def due(self, wal_bytes: int) -> bool:
        if wal_bytes < self.checkpointed_at:
            self.checkpointed_at = 0
        if wal_bytes < self.checkpointed_at + CHECKPOINT_WAL_BYTES:
            return False
        self.checkpointed_at = wal_bytes
        return True


def run_steps(conn: sqlite3.Connection, steps: Sequence[Step]) -> list[Any]:
    """Run steps on ``conn`` (inside whatever transaction the caller holds)."""
    out: list[Any] = []
    for compiled, params, want in steps:
        if want is Want.MANY:
            conn.executemany(compiled.sql, [compiled.named(p) for p in params])
            out.append(None)
            continue
        cursor = conn.execute(compiled.sql, compiled.named(params))
        if want is Want.ONE:
            # fetchall: a RETURNING statement is finished only once fully read.
            rows = cursor.fetchall()
            out.append(rows[0] if rows else None)
        elif want is Want.ALL:
            out.append(cursor.fetchall())
        elif want is Want.COUNT:
            out.append(cursor.rowcount)
        else:
            out.append(None)
    return out


def run_read_steps(conn: sqlite3.Connection, steps: Sequence[Step]) -> list[Any]:
    """Several reads share one snapshot."""
    if len(steps) == 1 or conn.in_transaction:
        return run_steps(conn, steps)
    conn.execute("BEGIN")
    try:
        return run_steps(conn, steps)
    finally:
        conn.execute("COMMIT")


def _capture_job(conn: sqlite3.Connection,
                 job: tuple[str, list[dict[str, Any]], Finish]) -> list[MemoryRecord]:
    """A turn's upserts (one per row, each returning its row), then their
    records: in the writer thread, so a record that cannot be built fails
    its write."""
    sql, params, finish = job
    # fetchall: a RETURNING statement is finished only once fully read.
    return finish([conn.execute(sql, p).fetchall()[0] for p in params])


def _teller(report: WriteReport) -> Report:
    """A worker report that hands the store the records, or ``None`` on failure."""
    def tell(ok: bool, value: Any) -> None:
        report(value if ok else None)
    return tell


def passive_checkpoint(conn: sqlite3.Connection, _: object = None) -> bool:
    """``PASSIVE`` checkpoints until every frame of the WAL is in the database
    (the writer's next transaction then starts the WAL over), at most
    ``CATCH_UP_PASSES``; True when that was reached."""
    for _pass in range(CATCH_UP_PASSES):
        _busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if copied >= frames:  # both -1 when the database is not in WAL mode
            return True
    return False


def read_version(conn: sqlite3.Connection, _: object = None) -> int | None:
    if conn.execute(HAS_VERSION_TABLE).fetchone() is None:
        return None
    version: int | None = conn.execute(MAX_VERSION).fetchone()[0]
    return version


def _enable_wal(conn: sqlite3.Connection, wait_s: float = 60.0) -> None:
    """``journal_mode=WAL``, retried while another connection holds the lock:
    switching modes can report "database is locked" at once, without waiting
    out ``busy_timeout``, when another process is opening the file too."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(0.2, pause * 2)


class SqliteAdapter(SqlStorageAdapter):
    """Storage in one SQLite file (or a private in-memory database)."""

    name = "sqlite"
    dialect_name = "sqlite"

    def __init__(self, target: SqliteTarget, settings: Settings | None = None, *,
                 migrations: Sequence[mig.MigrationStep] = mig.MIGRATIONS) -> None:
        settings = settings or Settings()
        super().__init__(settings=settings, precompiled=STATEMENTS, migrations=migrations)
        self.target = target
        self.synchronous = settings.sqlite_synchronous.upper()
        self.writer = SqliteWorker(name="stm-sqlite-writer", label=target.label,
                                   connect=self._connect_writer, transactional=True,
                                   # FULL syncs the log in every commit: milliseconds
                                   # the event loop must not wait for.
                                   inline=(settings.sqlite_inline_writes
                                           and self.synchronous != "FULL"))
        self.reader: SqliteWorker | None = None
        if target.path is not None:
            self.reader = SqliteWorker(name="stm-sqlite-reader", label=target.label,
                                       connect=self._connect, transactional=False)
        self._reads = self.reader or self.writer
        self._writes_since_check = 0
        self._checkpoint: asyncio.Task[Any] | None = None
        self._wal_growth = WalGrowth()
        #: The capture upsert, once compiled (every turn runs it).
        self._capture: Compiled | None = None

    def _connect_writer(self) -> sqlite3.Connection:
        # Inline jobs use the writer's connection from the caller's thread, one
        # at a time with the writer thread (the worker's lock sees to that).
        conn = self._connect(check_same_thread=False)
        if self.reader is not None:
            conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        return conn

    def _connect(self, *, check_same_thread: bool = True) -> sqlite3.Connection:
        conn = sqlite3.connect(self.target.path or ":memory:", isolation_level=None,
                               timeout=BUSY_TIMEOUT_MS / 1000, cached_statements=256,
                               check_same_thread=check_same_thread)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _enable_wal(conn)
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            conn.close()
            raise
        return conn

    # -- lifecycle --------------------------------------------------------------------
    async def setup(self) -> SchemaStatus:
        self._ensure_open()
        path = self.target.path
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                raise ConfigurationError(
                    f"SQLite database {path!r}: folder {folder!r} does not exist")
        await self.writer.start()
        if self.reader is not None:
            await self.reader.start()
        current = await self._reads.run(read_version, None)
        latest = mig.latest_version(self.migrations)
        found = current
        created = False
        for n, step in enumerate(mig.pending_steps(current, self.migrations)):
            before = await self.writer.run(self._apply_step, (step, current is not None))
            if n == 0:
                found = before
            if before is None or before < step.version:
                created = created or step.version == 1
        return SchemaStatus(from_version=found, to_version=max(latest, found or 0),
                            created=created)

    def _apply_step(self, conn: sqlite3.Connection,
                    job: tuple[mig.MigrationStep, bool]) -> int | None:
        """Runs inside the writer's ``BEGIN IMMEDIATE``: re-read, then apply once.
        ``job``: the step, and whether the database existed before this setup."""
        step, upgrade = job
        before = read_version(conn)
        mig.pending_steps(before, self.migrations)  # refuses a schema beyond the window
        if before is not None and before >= step.version:
            return before
        dialect = dialect_named(self.dialect_name)
        with mig.applying(step, self.target.label, upgrade=upgrade):
            conn.execute(mig.version_table_ddl(dialect))
            for statement in step.statements(dialect):
                conn.execute(statement)
            conn.execute(ADD_VERSION, {"version": step.version,
                                        "applied_at_ms": time.time_ns() // 1_000_000})
        return before

    async def aclose(self) -> None:
        self._closed = True
        if self._checkpoint is not None:
            await asyncio.wait([self._checkpoint])
        await self.writer.close()
        if self.reader is not None:
            await self.reader.close()

    # -- running steps --------------------------------------------------------------------
    async def _run_read(self, steps: Sequence[Step]) -> list[Any]:
        return await self._reads.run(run_read_steps, steps)

    async def _run_write(self, steps: Sequence[Step]) -> list[Any]:
        self._count_write()
        return await self.writer.run(run_steps, steps)

    def _count_write(self) -> None:
        self._writes_since_check += 1
        if self._writes_since_check >= CHECKPOINT_CHECK_EVERY:
            self._writes_since_check = 0
            self._maybe_checkpoint()

    # -- memory writes (they can report their outcome) -----------------------------------
    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        return await self.capture_reported(writes, None)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        return await self.write_memory_reported(writes, None)

    async def capture_reported(self, writes: Sequence[CaptureWrite],
                               report: WriteReport | None) -> list[MemoryRecord]:
        if not writes:
            return []
        params, finish = self._capture_params(writes)
        compiled = self._capture or self._compile_capture()
        inline = len(params) <= INLINE_MAX_ROWS
        if compiled.constants or telemetry.tracer() is not None:  # the general path
            return await self._write_reported([Step(compiled, p, Want.ONE) for p in params],
                                              finish, report, "capture", inline=inline)
        # Every turn comes here: the upserts run straight, without steps.
        self._count_write()
        return await self.writer.run(_capture_job, (compiled.sql, params, finish),
                                     report=None if report is None else _teller(report),
                                     inline=inline)

    def _compile_capture(self) -> Compiled:
        self._capture = self._upsert_statement("capture", capture_upsert)
        return self._capture

    async def write_memory_reported(self, writes: Sequence[MemoryWrite],
                                    report: WriteReport | None) -> list[MemoryRecord]:
        if not writes:
            return []
        steps, finish = self._write_memory_steps(writes)
        return await self._write_reported(steps, finish, report, "write_memory",
                                          inline=len(writes) <= INLINE_MAX_ROWS)

    async def _write_reported(self, steps: list[Step], finish: Finish,
                              report: WriteReport | None, operation: str, *,
                              inline: bool) -> list[MemoryRecord]:
        def job(conn: sqlite3.Connection, steps: list[Step]) -> list[MemoryRecord]:
            # In the writer thread: a record that cannot be built fails its write.
            return finish(run_steps(conn, steps))

        return await self._on_writer(job, steps, operation,
                                     None if report is None else _teller(report),
                                     inline=inline)

    async def _timed_purge(self, step: Step) -> tuple[list[Any], float, bool]:
        """The purge on the writer thread, in slices a waiting turn write can
        come between (:mod:`.sqlite_purge`), timed there: a batch queued behind
        turn writes held the writer only while it ran."""
        compiled, params, _want = step
        waiting = self.writer.queued

        def job(conn: sqlite3.Connection, steps: list[Step]) -> SlicedPurge:
            return purge_in_slices(conn, compiled, params, waiting)

        done = await self._on_writer(job, [step], "purge_older_than", alone=True)
        return done.rows, done.held_s, done.yielded

    async def _on_writer(self, job: Callable[[sqlite3.Connection, list[Step]], T],
                         steps: list[Step], operation: str, report: Report | None = None,
                         *, alone: bool = False, inline: bool = False) -> T:
        """``job`` on the writer thread, counted for the checkpoint policy and
        inside a write span while tracing; ``alone``: in a transaction of its
        own; ``inline``: a memory write, which may run on the caller's thread
        (see :mod:`.sqlite_worker`)."""
        self._count_write()
        tracer = telemetry.tracer()
        if tracer is None:
            return await self.writer.run(job, steps, report=report, alone=alone, inline=inline)
        with tracer.start_as_current_span(
                "stm.storage.write", attributes=self._span_attributes(steps, operation)):
            return await self.writer.run(job, steps, report=report, alone=alone, inline=inline)

    def _maybe_checkpoint(self) -> None:
        """Start a passive checkpoint on the reader once the WAL has grown by
        ``CHECKPOINT_WAL_BYTES`` since the last one (or since it started over)."""
        if self.reader is None or self.target.path is None:
            return
        try:
            wal_bytes = os.stat(self.target.path + "-wal").st_size
        except OSError:
            return
        if wal_bytes >= WRITER_CHECKPOINT_WAL_BYTES:
            # The reader has not kept up (a slow disk, writes never pausing),
            # whether or not its checkpoint is still running: the writer
            # stops and finishes the checkpoint before its next write.
            self.writer.request_idle_checkpoint(even_if_busy=True)
            return
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        if self._wal_growth.due(wal_bytes):
            self._checkpoint = asyncio.get_running_loop().create_task(
                self._run_checkpoint(), name="stm-sqlite-checkpoint")

    async def _run_checkpoint(self) -> None:
        assert self.reader is not None
        try:
            # A reader that caught up leaves the writer a WAL to start over
            # unless the writer committed meanwhile; then the writer finishes
            # the tail when its queue is next empty.
            if not await self.reader.run(passive_checkpoint, None):
                self.writer.request_idle_checkpoint()
        except Exception:
            # The next look at the WAL tries again; writes are unaffected.
            log.warning("WAL checkpoint of %s failed", self.target.label, exc_info=True)
