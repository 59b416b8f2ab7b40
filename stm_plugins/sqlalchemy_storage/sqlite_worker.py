"""A thread that owns one ``sqlite3`` connection and runs jobs for async callers.

The writer (``transactional=True``) does group commit: it drains everything
queued, runs the batch in one ``BEGIN IMMEDIATE … COMMIT``, then wakes every
caller at once. Jobs almost never fail, so a batch first runs without
savepoints; if a job does fail, that transaction is rolled back and the batch
runs again with each job in a ``SAVEPOINT`` (the failing job rolls back alone
and raises to its own caller). Each caller still waits for the commit that
holds its write, so nothing acknowledged can be lost; the batch pays one
commit and one thread hop instead of one per write.

The reader (``transactional=False``) runs jobs one after another; WAL lets it
read while the writer writes.

Callers pay one hop each way: ``queue.put`` in, ``loop.call_soon_threadsafe``
out (one wake-up per batch, not per job).

A writer opened with ``inline=True`` may run a small job (``run(...,
inline=True)``: a turn's capture, a tool write) on the caller's own thread
instead, when no other write waits: no job of the thread's is queued or
running, no checkpoint must finish first, and no other process holds the
write lock (the connection's own ``busy_timeout`` is 0, so ``BEGIN
IMMEDIATE`` answers at once; the thread waits out other processes' locks
itself, see ``_begin``). Two thread hops cost more than the small write
itself. The event loop's other callbacks wait for an inline job, so it holds
them for one small transaction at most: while callbacks are ready (a bot's
loop always has a heartbeat, timers and other tasks waking), one inline job
runs per pass of the loop, and the next job before the loop has run them
goes to the thread. A burst of concurrent callers thus sends all but its
first to the thread, which commits them together, and a caller writing
without ever suspending lets the loop run every other write.

A job may carry a ``report`` callback: it is called on the caller's event loop
with the job's outcome as soon as that outcome is known, before the caller
resumes and even when the caller was cancelled meanwhile (the store mirrors
committed rows into its cache that way, without a task of its own per write).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from stm_core.errors import StorageError

log = logging.getLogger("stm.storage.sqlite")

A = TypeVar("A")
T = TypeVar("T")

#: Called on the event loop with a job's outcome: ``(True, value)`` or ``(False, error)``.
Report = Callable[[bool, Any], None]
#: A job: ``fn(connection, arg)``, where to deliver its outcome, and who to tell.
_Job = tuple[Callable[[sqlite3.Connection, Any], Any], Any, asyncio.AbstractEventLoop,
             "asyncio.Future[Any]", Report | None]
_Outcome = tuple["asyncio.Future[Any]", bool, Any, Report | None]
_STOP = object()
#: Queued to wake an idle thread for a checkpoint; no job.
_WAKE = object()
#: Journal modes in which a commit never waits for another connection's lock.
_NO_WAIT_JOURNAL_MODES = frozenset({"wal", "memory"})
#: First and longest pause between two tries of a lock another process holds.
_LOCK_PAUSE_S = (0.001, 0.05)
#: How often waiting for another process's write lock is logged.
_LOCK_WARN_EVERY_S = 5.0


@attrs.define
class WorkerStats:
    """Counters of a worker (operators, tests)."""

    batches: int = 0
    jobs: int = 0
    largest_batch: int = 0
    failed_jobs: int = 0
    #: Batches run again job by job (with savepoints) because a job failed.
    retried_batches: int = 0
    #: Jobs run on the caller's thread, each in its own transaction (not in ``jobs``).
    inline_jobs: int = 0


class SqliteWorker:
    """One connection, one thread, a queue of jobs."""

    def __init__(self, *, name: str, label: str, connect: Callable[[], sqlite3.Connection],
                 transactional: bool, max_batch: int = 512,
                 lock_wait_s: float = 60.0, inline: bool = False) -> None:
        self.name = name
        self.label = label
        self._connect = connect
        self._transactional = transactional
        self._max_batch = max_batch
        self._lock_wait_s = lock_wait_s
        self._queue: queue.SimpleQueue[_Job | object] = queue.SimpleQueue()
        # Inline jobs (see the module's docstring): asked for, then possible once
        # the connection is open (a journal mode whose commits never wait).
        self._inline_asked = inline and transactional
        self._inline = False
        self._conn: sqlite3.Connection | None = None
        # Held by whoever uses the connection: the thread, or an inline job.
        self._conn_lock = threading.Lock()
        self._hold = LoopHold()
        # Jobs queued and not yet settled on their loop; an inline job waits for them.
        self._pending = 0
        self._pending_lock = threading.Lock()
        # Outcomes of the batch being run, delivered once the thread has let
        # go of the connection (the woken caller may then write inline at once).
        self._outcomes: list[tuple[asyncio.AbstractEventLoop, _Outcome]] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._checkpoint_due = threading.Event()
        self._checkpoint_forced = False
        # Who waits for the thread to end (see _join): a failed ``start`` or the
        # first ``close``; there is never a second (a closed worker skips it).
        self._exit_lock = threading.Lock()
        self._exited = False
        self._exit_waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        self.stats = WorkerStats()

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def runs_inline(self) -> bool:
        """Whether jobs asked to may run on the caller's thread (see the module)."""
        return self._inline

    def queued(self) -> int:
        """Jobs waiting (not yet taken by the thread)."""
        return self._queue.qsize()

    async def start(self) -> None:
        """Open the connection in the thread; raises what opening raised."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._thread = threading.Thread(target=self._main, args=(loop, ready),
                                        name=self.name, daemon=True)
        self._thread.start()
        try:
            await ready
        except BaseException:
            await self._join()
            self._closed = True
            raise

    async def run(self, fn: Callable[[sqlite3.Connection, A], T], arg: A, *,
                  report: Report | None = None, alone: bool = False,
                  inline: bool = False) -> T:
        """Run ``fn(connection, arg)`` in the thread (the writer: and commit it).

        ``report``, when given, is called once with the outcome (see above),
        whether or not this call is still awaited then; when this raises
        before the job is queued, it is not called. A job run ``alone`` (the
        janitor's) gets a transaction of its own, after the jobs drained with
        it: a turn write never waits for its commit. An ``inline`` job (a
        small one) runs on the caller's thread when nothing else waits (see
        the module), in a transaction of its own, and on the thread otherwise.
        """
        if self._closed or self._thread is None:
            raise StorageError(f"SQLite database {self.label} is "
                               + ("closed" if self._closed else "not set up (call setup())"))
        loop = asyncio.get_running_loop()
        if inline and self._inline:
            ran, value = self._run_inline(loop, fn, arg, report)
            if ran:
                return value  # type: ignore[no-any-return]
        future: asyncio.Future[T] = loop.create_future()
        with self._pending_lock:
            self._pending += 1
        self._queue.put((_Alone(fn) if alone else fn, arg, loop, future, report))
        return await future

    def _run_inline(self, loop: asyncio.AbstractEventLoop,
                    fn: Callable[[sqlite3.Connection, Any], Any], arg: Any,
                    report: Report | None) -> tuple[bool, Any]:
        """``(True, value)`` when the job ran here and committed; ``(False, None)``
        when it must go to the thread (something else waits). Raises its error."""
        if not self._conn_lock.acquire(blocking=False):
            return False, None  # the thread is running a batch or a checkpoint
        try:
            # A job of the thread's stops being pending only once its outcome
            # was settled on its loop (its report ran): none is overtaken.
            if self._pending or self._checkpoint_forced or not self._hold.may_hold(loop):
                return False, None
            conn = self._conn
            if conn is None:  # the thread has ended; run() raises for that
                return False, None
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):  # another process writes: the thread waits for it
                    return False, None
                ok, value = False, _storage_error(
                    exc, f"SQLite {self.label}: cannot start a write")
            else:
                ok, value = self._job_and_commit(conn, fn, arg)
        finally:
            self._conn_lock.release()
        self.stats.inline_jobs += 1
        ok, value = _told(ok, value, report)
        if not ok:
            raise value
        return True, value

    async def close(self) -> None:
        """Finish every queued job, then close the connection and end the thread."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._queue.put(_STOP)
            await self._join()

    async def _join(self) -> None:
        """Wait for the thread to end. The thread tells the loop as it leaves, so
        no helper thread (``asyncio.to_thread``, and the executor that
        ``asyncio.run`` then shuts down) is started for this."""
        assert self._thread is not None
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] | None = None
        with self._exit_lock:
            if not self._exited:
                ended = loop.create_future()
                self._exit_waiter = (loop, ended)
        if ended is not None:
            await ended
        self._thread.join()  # it has left _main: returns at once

    # -- the thread ----------------------------------------------------------------------
    def _main(self, loop: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        try:
            self._open_and_serve(loop, ready)
        finally:
            with self._exit_lock:
                self._exited = True
                waiter, self._exit_waiter = self._exit_waiter, None
            if waiter is not None:
                _deliver(waiter[0], [(waiter[1], True, None, None)])

    def _open_and_serve(self, loop: asyncio.AbstractEventLoop,
                        ready: asyncio.Future[None]) -> None:
        try:
            conn = self._connect()
        except Exception as exc:
            error = _storage_error(exc, f"cannot open SQLite database {self.label}")
            _deliver(loop, [(ready, False, error, None)])
            return
        try:
            self._inline = self._inline_asked and self._prepare_inline_jobs(conn)
        except sqlite3.Error as exc:
            conn.close()
            _deliver(loop, [(ready, False, _storage_error(
                exc, f"cannot open SQLite database {self.label}"), None)])
            return
        self._conn = conn
        _deliver(loop, [(ready, True, None, None)])
        try:
            self._serve(conn)
        finally:
            with self._conn_lock:
                self._conn = None
                self._inline = False
                conn.close()

    @staticmethod
    def _prepare_inline_jobs(conn: sqlite3.Connection) -> bool:
        """Whether inline jobs can run on ``conn``, setting it up for them. In
        WAL (or in memory) a transaction begun with ``BEGIN IMMEDIATE`` never
        waits for another connection again, so the connection's
        ``busy_timeout`` is set to 0: an inline job's ``BEGIN IMMEDIATE`` then
        never blocks its caller (``_begin`` waits on the thread). Other
        journal modes keep the timeout and get no inline jobs (False)."""
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if mode not in _NO_WAIT_JOURNAL_MODES:
            return False
        conn.execute("PRAGMA busy_timeout=0")
        return True

    def request_idle_checkpoint(self, *, even_if_busy: bool = False) -> None:
        """Ask the thread for a ``PASSIVE`` checkpoint the next time its queue is
        empty (another connection did the bulk of it; this one finishes the
        tail, so SQLite can restart the WAL from the beginning). With
        ``even_if_busy`` it runs before the next batch, no job runs inline
        until it has, and it waits for another connection's checkpoint still
        running (see :func:`checkpoint_waiting`)."""
        self._checkpoint_forced = self._checkpoint_forced or even_if_busy
        self._checkpoint_due.set()
        if self._inline:  # writes may not reach the thread: wake it for this
            self._queue.put(_WAKE)

    def _checkpoint_if_idle(self, conn: sqlite3.Connection) -> None:
        if not self._checkpoint_due.is_set() or (
                not self._checkpoint_forced and not self._queue.empty()):
            return
        forced, self._checkpoint_forced = self._checkpoint_forced, False
        self._checkpoint_due.clear()
        try:
            if forced:
                if not checkpoint_waiting(conn, self._lock_wait_s):
                    log.warning("WAL checkpoint of %s: another checkpoint ran for over %.0f s",
                                self.label, self._lock_wait_s)
            else:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            log.warning("idle WAL checkpoint of %s failed", self.label, exc_info=True)

    def _serve(self, conn: sqlite3.Connection) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        lock = self._conn_lock
        while True:
            with lock:
                self._checkpoint_if_idle(conn)
            item = get()
            if item is _STOP:
                return
            batch: list[_Job] = [] if item is _WAKE else [item]  # type: ignore[list-item]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                if item is not _WAKE:
                    batch.append(item)  # type: ignore[arg-type]
            if batch:
                self._run_taken(conn, batch)
            if stop:
                return

    def _run_taken(self, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        self.stats.batches += 1
        self.stats.jobs += len(batch)
        self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        with self._conn_lock:
            if not self._transactional:
                self._run_each(conn, batch)
            elif len(batch) == 1:
                self._run_alone(conn, batch[0])
            else:
                self._run_batch(conn, batch)
        self._deliver_outcomes()

    def _deliver_outcomes(self) -> None:
        done, self._outcomes = self._outcomes, []
        _deliver_by_loop(done, self._jobs_settled)

    def _jobs_settled(self, count: int) -> None:
        """``count`` jobs' outcomes were settled on their loop (see _run_inline)."""
        with self._pending_lock:
            self._pending -= count

    def _run_batch(self, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        """Several jobs: one transaction for those that may share one, then
        each job that runs alone in its own."""
        alone = [job for job in batch if type(job[0]) is _Alone]
        shared = [job for job in batch if type(job[0]) is not _Alone] if alone else batch
        if len(shared) == 1:
            self._run_alone(conn, shared[0])
        elif shared and not self._run_plain(conn, shared):
            self._run_transaction(conn, shared)
        if alone:
            self._deliver_outcomes()  # the shared jobs' callers wait for no job alone
        for job in alone:
            self._run_alone(conn, job)

    def _run_each(self, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        for fn, arg, loop, future, report in batch:
            try:
                outcome: _Outcome = (future, True, fn(conn, arg), report)
            except Exception as exc:
                self.stats.failed_jobs += 1
                outcome = (future, False, _storage_error(exc, f"SQLite {self.label}"), report)
            self._outcomes.append((loop, outcome))

    def _run_alone(self, conn: sqlite3.Connection, job: _Job) -> None:
        """A batch of one job (every write of a lone caller): its own
        transaction, which a failure rolls back; no savepoint needed."""
        fn, arg, loop, future, report = job
        try:
            self._begin(conn)
        except Exception as exc:
            error = _storage_error(exc, f"SQLite {self.label}: cannot start a write")
            self._outcomes.append((loop, (future, False, error, report)))
            return
        ok, value = self._job_and_commit(conn, fn, arg)
        self._outcomes.append((loop, (future, ok, value, report)))

    def _job_and_commit(self, conn: sqlite3.Connection,
                        fn: Callable[[sqlite3.Connection, Any], Any],
                        arg: Any) -> tuple[bool, Any]:
        """A lone job in the transaction just begun, then its commit; a failure
        rolls the transaction back. ``(ok, value or error)``; an interrupt
        (``BaseException``) rolls back too and propagates."""
        try:
            value = fn(conn, arg)
        except Exception as exc:
            self.stats.failed_jobs += 1
            self._undo_job(conn, False)
            return False, _storage_error(exc, f"SQLite {self.label}")
        except BaseException:
            self._undo_job(conn, False)  # no transaction stays open on the connection
            raise
        error = self._commit_error(conn)
        return (True, value) if error is None else (False, error)

    def _run_plain(self, conn: sqlite3.Connection, batch: list[_Job]) -> bool:
        """The batch in one transaction without savepoints (the usual case: two
        statements fewer per job). False, with nothing committed or delivered,
        when a job failed or the transaction could not start: the batch then
        runs again in :meth:`_run_transaction`, which isolates the failure."""
        try:
            self._begin(conn)
        except Exception:
            return False
        done: list[tuple[asyncio.AbstractEventLoop, _Outcome]] = []
        try:
            for fn, arg, loop, future, report in batch:
                done.append((loop, (future, True, fn(conn, arg), report)))
        except Exception:
            self.stats.retried_batches += 1
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                log.warning("SQLite %s: rollback before a retry failed", self.label,
                            exc_info=True)
            return False
        self._outcomes += self._commit(conn, done)
        return True

    def _run_transaction(self, conn: sqlite3.Connection, batch: list[_Job]) -> None:
        """The batch in as few transactions as possible (one, unless SQLite itself
        rolled a transaction back), each job isolated by a savepoint."""
        outcomes: list[tuple[asyncio.AbstractEventLoop, _Outcome]] = []
        i = 0
        while i < len(batch):
            try:
                self._begin(conn)
            except Exception as exc:
                error = _storage_error(exc, f"SQLite {self.label}: cannot start a write")
                outcomes += [(loop, (fut, False, error, report))
                             for _f, _a, loop, fut, report in batch[i:]]
                break
            done: list[tuple[asyncio.AbstractEventLoop, _Outcome]] = []
            # A lone job needs no savepoint: its failure rolls back the transaction.
            savepoints = len(batch) - i > 1
            lost = False
            while i < len(batch):
                fn, arg, loop, future, report = batch[i]
                i += 1
                try:
                    if savepoints:
                        conn.execute("SAVEPOINT stm_job")
                    value = fn(conn, arg)
                    if savepoints:
                        conn.execute("RELEASE stm_job")
                except Exception as exc:
                    self.stats.failed_jobs += 1
                    outcomes.append((loop, (future, False,
                                            _storage_error(exc, f"SQLite {self.label}"),
                                            report)))
                    if not self._undo_job(conn, savepoints):
                        # SQLite ended the whole transaction (disk full, I/O error):
                        # the jobs before this one did not commit either.
                        lost = True
                        outcomes += _failed(done, StorageError(
                            f"SQLite {self.label}: the write was rolled back together "
                            f"with a failing write in the same transaction: {exc}"))
                        break
                else:
                    done.append((loop, (future, True, value, report)))
            if lost:
                continue
            outcomes += self._commit(conn, done)
        self._outcomes += outcomes

    def _begin(self, conn: sqlite3.Connection) -> None:
        """``BEGIN IMMEDIATE``, waiting out other processes' write locks.

        With ``busy_timeout`` (5 s) SQLite waits within each attempt; with none
        (a writer that runs inline jobs) the pauses between attempts wait,
        growing from 1 to 50 ms. A writer in another process holding the lock
        is waited for up to ``lock_wait_s``, with a warning every 5 s.
        """
        start = time.monotonic()
        deadline, warned = start + self._lock_wait_s, start
        pause = _LOCK_PAUSE_S[0]
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                now = time.monotonic()
                if not is_busy(exc) or now >= deadline:
                    if is_busy(exc):
                        raise StorageError(
                            f"SQLite {self.label}: another process held the write lock for "
                            f"over {self._lock_wait_s:.0f} s") from exc
                    raise
                if now - warned >= _LOCK_WARN_EVERY_S or not self._inline:
                    warned = now
                    log.warning("SQLite %s: waiting for another process's write lock",
                                self.label)
                if self._inline:
                    time.sleep(min(pause, deadline - now))
                    pause = min(_LOCK_PAUSE_S[1], pause * 2)

    @staticmethod
    def _undo_job(conn: sqlite3.Connection, savepoint: bool) -> bool:
        """Undo a failed job; False when SQLite already ended the transaction."""
        if not conn.in_transaction:
            return False
        try:
            if savepoint:
                conn.execute("ROLLBACK TO stm_job")
                conn.execute("RELEASE stm_job")
            else:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return False
        return True

    def _commit(self, conn: sqlite3.Connection,
                done: list[tuple[asyncio.AbstractEventLoop, _Outcome]]
                ) -> list[tuple[asyncio.AbstractEventLoop, _Outcome]]:
        error = self._commit_error(conn)
        return done if error is None else _failed(done, error)

    def _commit_error(self, conn: sqlite3.Connection) -> Exception | None:
        """``COMMIT``; what failed, the transaction rolled back, or ``None``."""
        if not conn.in_transaction:  # a lone job failed and was rolled back
            return None
        try:
            conn.execute("COMMIT")
        except Exception as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return _storage_error(exc, f"SQLite {self.label}: commit failed")
        return None


class _Alone:
    """A job that gets a transaction of its own (see :meth:`SqliteWorker.run`)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[sqlite3.Connection, Any], Any]) -> None:
        self.fn = fn

    def __call__(self, conn: sqlite3.Connection, arg: Any) -> Any:
        return self.fn(conn, arg)


def _failed(done: list[tuple[asyncio.AbstractEventLoop, _Outcome]],
            error: BaseException) -> list[tuple[asyncio.AbstractEventLoop, _Outcome]]:
    return [(loop, (future, False, error, report))
            for loop, (future, _ok, _v, report) in done]


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _storage_error(exc: Exception, context: str) -> Exception:
    """Driver errors become StorageError (cause chained); ours pass through."""
    if isinstance(exc, sqlite3.Error):
        error = StorageError(f"{context}: {exc}")
        error.__cause__ = exc
        return error
    return exc


def checkpoint_waiting(conn: sqlite3.Connection, wait_s: float) -> bool:
    """A ``PASSIVE`` checkpoint on the writing connection, tried again while
    another connection's runs (SQLite then answers busy at once): the caller
    holds the connection, so no frame is added meanwhile and the other one
    soon ends. False when it still ran after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    pause = _LOCK_PAUSE_S[0]
    while conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0]:
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(_LOCK_PAUSE_S[1], pause * 2)
    return True


class LoopHold:
    """When a job may hold an event loop's thread (see the module): the loop
    is idle, or no job held it since it last ran its ready callbacks."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = False

    def may_hold(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether a job may run on ``loop``'s thread now; a yes while callbacks
        are ready counts as this pass's hold (the callback scheduled here runs
        after them and ends it)."""
        if loop_is_idle(loop):
            return True
        if self._held or not hasattr(loop, "_ready"):
            return False
        self._held = True
        loop.call_soon(self._release)
        return True

    def _release(self) -> None:
        self._held = False


def loop_is_idle(loop: asyncio.AbstractEventLoop) -> bool:
    """No other callback is ready to run on ``loop`` (asyncio's own loops keep
    them in ``_ready``; a loop without it is never taken for idle)."""
    ready = getattr(loop, "_ready", None)
    return ready is not None and not ready


def _told(ok: bool, value: Any, report: Report | None) -> tuple[bool, Any]:
    """The outcome after telling ``report``; a report that raised fails it."""
    if report is not None:
        try:
            report(ok, value)
        except Exception as exc:  # the other callers must still be woken
            log.exception("reporting a SQLite job's outcome failed")
            return False, exc
    return ok, value


#: Told how many jobs' outcomes were just settled (on their loop).
Settled = Callable[[int], None]


def _settle(items: list[_Outcome], settled: Settled | None = None) -> None:
    try:
        for future, ok, value, report in items:
            ok, value = _told(ok, value, report)
            if future.done():  # the caller was cancelled; the write still happened
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
    finally:
        if settled is not None:
            settled(len(items))


def _deliver_by_loop(outcomes: list[tuple[asyncio.AbstractEventLoop, _Outcome]],
                     settled: Settled | None = None) -> None:
    """One wake-up per event loop for all of its callers' outcomes."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for loop, outcome in outcomes:
        by_loop.setdefault(loop, []).append(outcome)
    for loop, items in by_loop.items():
        _deliver(loop, items, settled)


def _deliver(loop: asyncio.AbstractEventLoop, items: list[_Outcome],
             settled: Settled | None = None) -> None:
    try:
        loop.call_soon_threadsafe(_settle, items, settled)
    except RuntimeError:  # the caller's loop is closed; nobody is waiting
        log.debug("dropping %d results for a closed event loop", len(items))
        if settled is not None:
            settled(len(items))
