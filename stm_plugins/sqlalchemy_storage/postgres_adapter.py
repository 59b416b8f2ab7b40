"""PostgreSQL storage on an ``asyncpg`` pool.

Statements are compiled once to ``$n`` SQL and run with positional arguments
(asyncpg prepares and caches them per connection). A turn's writes are one
round trip: a lone upsert runs in autocommit, several upserts of one call are
joined into one statement of data-modifying CTEs (atomic by itself). Other
multi-statement writes run in one transaction.

``?schema=NAME`` puts everything in that schema (created on setup) through the
connections' ``search_path``.

Several processes may share the database: each write also announces what it
changed (``NOTIFY``, in the same statement; see :mod:`.notify`) and
:meth:`PostgresAdapter.subscribe` listens for the others' announcements.
Connecting and every statement are bounded by ``db_timeout_seconds``, so a
database that stops answering fails a call instead of hanging it; the pool
replaces broken connections by itself once the database is back. Every
call (reads, writes, admin deletes, purge batches) runs on the pool: on the
one pooled connection kept out between calls when it is free, which skips
the pool's acquire and release (see :mod:`.reserved_connection`). The
listening connection runs none of them (see :class:`~.notify.PgSubscription`).
Memory writes report their outcome to the store themselves (see
:mod:`.reported_writes`), so the store wraps no task of its own around them.

Statements keep no session state, so they run through a pooler in transaction
mode (PgBouncer ``pool_mode = transaction``): each call is one statement or
one transaction, the schema lock is transaction-scoped, and prepared
statements are either off (``?statement_cache_size=0``) or tracked by the
pooler (PgBouncer 1.21+ ``max_prepared_statements``). LISTEN needs a session,
so ``listen_url`` (``STM_LISTEN_URL``) can point the listening connection
straight at the database; a listener that does not hear its own test notice
is reported (see :mod:`stm_core.engine.invalidation`).
"""

from __future__ import annotations

import contextlib
import logging
import operator
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import asyncpg
import sqlalchemy as sa

from stm_core.errors import ConfigurationError, StorageError
from stm_core.settings import Settings
from stm_core.storage.protocol import WriteReport
from stm_core.storage.records import (
    CaptureWrite,
    ChangeNotice,
    MemoryRecord,
    MemoryWrite,
    SchemaStatus,
)
from stm_plugins.sqlalchemy_storage import codec, notify
from stm_plugins.sqlalchemy_storage import migrations as mig
from stm_plugins.sqlalchemy_storage import statements as st
from stm_plugins.sqlalchemy_storage.base import (
    Finish,
    SqlStorageAdapter,
    Step,
    Want,
    capture_upsert,
    write_upsert,
)
from stm_plugins.sqlalchemy_storage.compiled import compile_statement, dialect_named
from stm_plugins.sqlalchemy_storage.reported_writes import ReportedWriter
from stm_plugins.sqlalchemy_storage.reserved_connection import ReservedConnection
from stm_plugins.sqlalchemy_storage.schema import schema_version
from stm_plugins.sqlalchemy_storage.urls import PostgresTarget, parse_postgres_url

POOL_MIN = 1
POOL_MAX = 10
#: Upserts joined into one statement at most; larger calls use a transaction.
MAX_JOINED_UPSERTS = 8

#: InternalClientError: asyncpg lost track of a connection's protocol state, as
#: when a call starts on a connection the server has just ended (a restarting
#: PostgreSQL sends FATAL 57P01 before it closes the socket).
_DRIVER_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError,
                  OSError)
log = logging.getLogger("stm.storage.postgres")
#: What a transaction pooler does to asyncpg's cached (named) statements.
_NAMED_STATEMENT_ERRORS = (asyncpg.InvalidSQLStatementNameError,
                           asyncpg.DuplicatePreparedStatementError)

_VERSION_TABLE_EXISTS = f"SELECT to_regclass('{schema_version.name}') IS NOT NULL"
POSTGRES_DIALECT = dialect_named("postgresql")
_MAX_VERSION = compile_statement(sa.select(sa.func.max(schema_version.c.version)),
                                 POSTGRES_DIALECT).sql
_ADD_VERSION = compile_statement(sa.insert(schema_version).values(
    version=sa.bindparam("version", type_=sa.Integer),
    applied_at_ms=sa.bindparam("applied_at_ms", type_=sa.BigInteger)), POSTGRES_DIALECT).sql
# Taken first in the one transaction that reads the version and applies every
# step, held to its commit: each opener reads the version only after the
# previous holder committed (every statement after the lock sees a fresh
# snapshot under READ COMMITTED). Transaction-scoped, so a pooler in
# transaction mode cannot strand it on a server connection, as it would a
# session lock (pg_advisory_lock) whose unlock ran on another one.
_SETUP_LOCK = "SELECT pg_advisory_xact_lock(hashtext($1))"
#: Longest wait for a listener's own test notice to come back.
DELIVERY_CHECK_TIMEOUT_S = 2.0


#: Where a joined upsert's row says which of the call's rows it is (its last column).
_POSITION = operator.itemgetter(-1)
#: What a call does on the connection it runs on: its steps' results.
_Work = Callable[[Any, Sequence[Step]], Awaitable[list[Any]]]


async def _run_step(conn: Any, step: Step) -> Any:
    compiled, params, want = step
    if want is Want.MANY:
        await conn.executemany(compiled.sql, [compiled.positional(p) for p in params])
        return None
    args = compiled.positional(params)
    if want is Want.ONE:
        return await conn.fetchrow(compiled.sql, *args)
    if want is Want.ALL:
        return await conn.fetch(compiled.sql, *args)
    status: str = await conn.execute(compiled.sql, *args)
    if want is Want.COUNT:  # "DELETE 42"
        return int(status.rsplit(" ", 1)[-1])
    return None


async def _read_steps(conn: Any, steps: Sequence[Step]) -> list[Any]:
    if len(steps) == 1:
        return [await _run_step(conn, steps[0])]
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        return [await _run_step(conn, s) for s in steps]


async def _write_steps(conn: Any, steps: Sequence[Step]) -> list[Any]:
    if len(steps) == 1:  # one statement commits by itself
        return [await _run_step(conn, steps[0])]
    async with conn.transaction():
        return [await _run_step(conn, s) for s in steps]


async def keep_session(conn: Any) -> None:
    """What a pooled connection needs on release beyond asyncpg's own cleanup
    (which rolls back an open transaction and drops listener callbacks):
    nothing. stm leaves no session state behind: the search path comes with
    the connection, advisory locks are transaction-scoped, LISTEN runs on a
    connection of its own and no statement uses SET or cursors. asyncpg's
    default reset (``RESET ALL``, ``UNLISTEN *``, ``CLOSE ALL``, unlocking
    advisory locks) would cost a round trip on every release."""


async def _read_version(conn: Any) -> int | None:
    if not await conn.fetchval(_VERSION_TABLE_EXISTS):
        return None
    version: int | None = await conn.fetchval(_MAX_VERSION)
    return version


class PostgresAdapter(SqlStorageAdapter):
    """Storage in a PostgreSQL database (optionally one schema of it)."""

    name = "postgresql"
    dialect_name = "postgresql"

    def __init__(self, target: PostgresTarget, settings: Settings | None = None, *,
                 migrations: Sequence[mig.MigrationStep] = mig.MIGRATIONS,
                 pool_max: int = POOL_MAX) -> None:
        super().__init__(settings=settings or Settings(),
                         migrations=migrations)
        self.target = target
        self._pool_max = pool_max
        self._pool: Any = None
        self._reserved: ReservedConnection | None = None
        self._reported = ReportedWriter()
        #: Stamped on this adapter's change notices (see :mod:`.notify`).
        self.instance_id = uuid.uuid4().hex
        self.channel = notify.channel_for(target.schema)
        self._timeout = self.settings.db_timeout_seconds
        self.listen_target = self._listen_target(self.settings.listen_url)

    def _listen_target(self, url: str | None) -> PostgresTarget:
        if url is None:
            return self.target
        listen = parse_postgres_url(url)
        if listen.schema not in (None, self.target.schema):
            raise ConfigurationError(
                f"the listen URL names schema {listen.schema!r} but statements use "
                f"{self.target.schema!r}; leave ?schema= off the listen URL")
        return listen

    @property
    def announces_changes(self) -> bool:
        return self.settings.cross_process_invalidation

    def _announce(self, statement: Any, what: str) -> Any:
        if not self.announces_changes:
            return statement
        kind: notify.Announce = "k" if what == "k" else "s" if what == "s" else "u"
        return notify.with_notice(statement, channel=self.channel, origin=self.instance_id,
                                  what=kind)

    def _server_settings(self) -> dict[str, str] | None:
        return {"search_path": f'"{self.target.schema}"'} if self.target.schema else None

    async def subscribe(self, on_notice: Callable[[ChangeNotice], None],
                        on_lost: Callable[[], None]) -> notify.PgSubscription:
        """Listen for other processes' change notices on a connection of its own
        (to ``listen_url`` when set), then check that a notice sent through the
        statement connections comes back (``delivers_notices``)."""
        self._ensure_open()
        where = self.listen_target

        async def connect() -> Any:
            # No search_path: LISTEN and the check query need no schema.
            return await asyncpg.connect(where.dsn, timeout=self._timeout,
                                         statement_cache_size=where.statement_cache_size)

        async def send(payload: str) -> None:
            async with self._acquire() as conn:
                await conn.execute("SELECT pg_notify($1, $2)", self.channel, payload)

        try:
            # A pooler on the statement URL never gets a LISTEN (it would stay
            # on a pooled server connection); a listen URL is the operator's word.
            subscription = await notify.subscribe(
                connect, self.channel, on_notice, on_lost, origin=self.instance_id,
                refuse_pooler=self.settings.listen_url is None)
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"cannot listen on PostgreSQL {where.label}: "
                               f"{self._why(exc)}") from exc
        try:
            await subscription.hears(send, self.instance_id,
                                     min(DELIVERY_CHECK_TIMEOUT_S, self._timeout))
        except _DRIVER_ERRORS as exc:
            await subscription.close()
            raise StorageError(f"cannot check notice delivery on PostgreSQL "
                               f"{where.label}: {self._why(exc)}") from exc
        return subscription

    # -- lifecycle ----------------------------------------------------------------------
    async def _connect_pool(self) -> Any:
        if self._pool is None:
            try:
                self._pool = await asyncpg.create_pool(
                    self.target.dsn, min_size=POOL_MIN, max_size=self._pool_max,
                    statement_cache_size=self.target.statement_cache_size,
                    server_settings=self._server_settings(), timeout=self._timeout,
                    command_timeout=self._timeout, reset=keep_session)
            except _DRIVER_ERRORS as exc:
                raise StorageError(
                    f"cannot connect to PostgreSQL {self.target.label}: "
                    f"{self._why(exc)}") from exc
            if self._pool_max > 1:
                self._reserved = ReservedConnection(self._pool, self._timeout)
        return self._pool

    async def setup(self) -> SchemaStatus:
        self._ensure_open()
        pool = await self._connect_pool()
        latest = mig.latest_version(self.migrations)
        try:
            async with pool.acquire() as conn, conn.transaction():
                await conn.execute(_SETUP_LOCK, self._setup_lock_key)
                await self._create_schema(conn)
                await self._check_search_path(conn)
                current = await _read_version(conn)
                found = current
                created = False
                for step in mig.pending_steps(current, self.migrations):
                    await self._apply_step(conn, step, upgrade=current is not None)
                    created = created or step.version == 1
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: schema setup failed: "
                               f"{self._why(exc)}") from exc
        return SchemaStatus(from_version=found, to_version=max(latest, found or 0),
                            created=created)

    @property
    def _setup_lock_key(self) -> str:
        return f"stm-setup:{self.target.schema or ''}"

    async def _create_schema(self, conn: Any) -> None:
        # Only when missing: CREATE SCHEMA needs a privilege a deployment may not grant.
        schema = self.target.schema
        if schema and await conn.fetchval("SELECT to_regnamespace($1) IS NULL",
                                          f'"{schema}"'):
            await conn.execute(f'CREATE SCHEMA "{schema}"')

    async def _check_search_path(self, conn: Any) -> None:
        # The schema is selected by a search_path startup parameter, which a
        # pooler may drop without a word: tables would then land elsewhere.
        schema = self.target.schema
        if schema and (found := await conn.fetchval("SELECT current_schema()")) != schema:
            raise ConfigurationError(
                f"PostgreSQL {self.target.label}: the connection works in schema {found!r}, "
                f"not {schema!r}: a connection pooler did not pass the search_path on. "
                f"Set it on the pooled database (PgBouncer: connect_query='SET search_path "
                f"TO \"{schema}\"', or track_extra_parameters = search_path from 1.20; "
                f"any pooler: ALTER ROLE ... SET search_path) (docs/deployment.md)")

    async def _apply_step(self, conn: Any, step: mig.MigrationStep, *, upgrade: bool) -> None:
        """One savepoint per step inside the setup transaction (which holds the lock)."""
        with mig.applying(step, self.target.label, upgrade=upgrade):
            async with conn.transaction():
                await conn.execute(mig.version_table_ddl(POSTGRES_DIALECT))
                for statement in step.statements(POSTGRES_DIALECT):
                    await conn.execute(statement)
                await conn.execute(_ADD_VERSION, step.version, time.time_ns() // 1_000_000)

    async def aclose(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        reserved, self._reserved = self._reserved, None
        if reserved is not None:
            await reserved.close()
        if pool is not None:
            await pool.close()

    def _require_pool(self) -> Any:
        if self._pool is None:
            raise StorageError(f"PostgreSQL {self.target.label} is "
                               + ("closed" if self._closed else "not set up (call setup())"))
        return self._pool

    @contextlib.asynccontextmanager
    async def _acquire(self) -> AsyncIterator[Any]:
        """A pooled connection; one whose protocol state the driver lost is
        closed instead of going back to the pool, which opens a new one."""
        async with self._require_pool().acquire(timeout=self._timeout) as conn:
            try:
                yield conn
            except asyncpg.InternalClientError:
                conn.terminate()
                raise

    # -- running steps ----------------------------------------------------------------------
    def _why(self, exc: BaseException) -> str:
        return describe_driver_error(exc, self._timeout)

    async def _run_read(self, steps: Sequence[Step]) -> list[Any]:
        try:
            return await self._on_connection(_read_steps, steps)
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: read failed: "
                               f"{self._why(exc)}{_pooler_hint(exc)}") from exc

    async def _run_write(self, steps: Sequence[Step]) -> list[Any]:
        try:
            return await self._on_connection(_write_steps, steps)
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: write failed: "
                               f"{self._why(exc)}{_pooler_hint(exc)}") from exc

    async def _on_connection(self, work: _Work, steps: Sequence[Step]) -> list[Any]:
        """``work`` on the kept connection when it is free, else on a pooled
        one (kept afterwards if none is). A connection whose call raised goes
        back to the pool, which resets or replaces it; one whose protocol
        state the driver lost is closed first."""
        reserved = self._reserved
        conn = None if reserved is None else reserved.take()
        if conn is not None and reserved is not None:
            pool = reserved.pool
        else:
            pool = self._require_pool()
            conn = await pool.acquire(timeout=self._timeout)
        try:
            result = await work(conn, steps)
        except BaseException as exc:
            if reserved is not None:
                reserved.forget(conn)
            if isinstance(exc, asyncpg.InternalClientError):
                conn.terminate()
            await pool.release(conn, timeout=self._timeout)
            raise
        if reserved is None or not reserved.keep(conn):
            await pool.release(conn, timeout=self._timeout)
        return result

    # -- memory writes that report their outcome (the store then needs no task) --------
    # They do what SqlStorageAdapter.capture and write_memory do. What fails
    # before the statement goes out (the records' encoding, a closed adapter)
    # raises here, in the caller, unreported; the rest runs in the write's task.
    async def capture_reported(self, writes: Sequence[CaptureWrite],
                               report: WriteReport | None) -> list[MemoryRecord]:
        """:meth:`capture`, reporting its outcome (``ReportedWrites``)."""
        if not writes:
            return []
        params, finish = self._capture_params(writes)
        self._require_pool()
        return await self._reported.run(
            _finished(self._upsert_rows("capture", capture_upsert, params), finish), report)

    async def write_memory_reported(self, writes: Sequence[MemoryWrite],
                                    report: WriteReport | None) -> list[MemoryRecord]:
        """:meth:`write_memory`, reporting its outcome (``ReportedWrites``)."""
        if not writes:
            return []
        writes = tuple(writes)
        if any(w.revision is not None for w in writes):
            steps, finish = self._write_memory_steps(writes)
            self._require_pool()
            return await self._reported.run(_finished(self._write(steps), finish), report)
        params = [codec.write_params(w) for w in writes]
        self._require_pool()

        def records(rows: list[Any]) -> list[MemoryRecord]:
            return [codec.memory_from_row(r, key=w.key) for r, w in zip(rows, writes, strict=True)]
        return await self._reported.run(
            _finished(self._upsert_rows("write", write_upsert, params), records), report)

    async def _upsert_rows(self, kind: str, build: Callable[[str, int | None], Any],
                           params: Sequence[Mapping[str, Any]]) -> list[Any]:
        n = len(params)
        if n == 1 or n > MAX_JOINED_UPSERTS or not _distinct_keys(params):
            return await super()._upsert_rows(kind, build, params)
        # One statement, one round trip; rows come back tagged with their position.
        compiled = self.statement((kind, n), lambda: self._announce(st.multi_row(build, n),
                                                                    "k"))
        (rows,) = await self._write([Step(compiled, params, Want.ALL)])
        return sorted(rows, key=_POSITION)

    async def purge_older_than(self, cutoff_ms: int, *, batch_size: int) -> int:
        deleted = await super().purge_older_than(cutoff_ms, batch_size=batch_size)
        if deleted and self.announces_changes:
            payload = notify.notice_payload(self.instance_id, p=cutoff_ms)
            try:
                async with self._acquire() as conn:
                    await conn.execute("SELECT pg_notify($1, $2)", self.channel, payload)
            except _DRIVER_ERRORS as exc:  # the rows are gone; others expire them later
                log.warning("could not announce a janitor purge: %s", exc)
        return deleted


async def _finished(rows: Awaitable[list[Any]], finish: Finish) -> list[MemoryRecord]:
    return finish(await rows)


def describe_driver_error(exc: BaseException, timeout_s: float) -> str:
    """The driver's text, or what happened when it has none: a timed-out call
    (``TimeoutError``, an ``OSError`` since 3.11) and some resets carry no text."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g} s (db_timeout_seconds)"
    return str(exc) or type(exc).__name__


def _pooler_hint(exc: BaseException) -> str:
    """The fix, when a pooler in transaction mode broke asyncpg's named statements."""
    if isinstance(exc, _NAMED_STATEMENT_ERRORS):
        return (" (a connection pooler in transaction mode between stm and PostgreSQL? "
                "add ?statement_cache_size=0 to the URL; see docs/deployment.md)")
    return ""


def _distinct_keys(params: Sequence[Mapping[str, Any]]) -> bool:
    """A statement may change a row only once, so joined upserts need distinct keys."""
    keys = {(p["scope_kind"], p["server_id"], p["user_id"], p["channel_id"], p["persona_id"])
            for p in params}
    return len(keys) == len(params)
