"""PostgreSQL storage on an ``asyncpg`` pool.

Statements are compiled once to ``$n`` SQL and run with positional arguments
(asyncpg prepares and caches them per connection). A turn's writes are one
round trip: a lone upsert runs in autocommit, several upserts of one call are
joined into one statement of data-modifying CTEs (atomic by itself). Other
multi-statement writes run in one transaction.

``?schema=NAME`` puts everything in that schema (created on setup) through the
connections' ``search_path``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import asyncpg
import sqlalchemy as sa

from stm_core.errors import StorageError
from stm_core.settings import Settings
from stm_core.storage.records import SchemaStatus
from stm_plugins.sqlalchemy_storage import migrations as mig
from stm_plugins.sqlalchemy_storage import statements as st
from stm_plugins.sqlalchemy_storage.base import SqlStorageAdapter, Step, Want
from stm_plugins.sqlalchemy_storage.compiled import POSTGRES_DIALECT, compile_statement
from stm_plugins.sqlalchemy_storage.schema import schema_version
from stm_plugins.sqlalchemy_storage.urls import PostgresTarget

POOL_MIN = 1
POOL_MAX = 10
#: Upserts joined into one statement at most; larger calls use a transaction.
MAX_JOINED_UPSERTS = 8

_DRIVER_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)

_VERSION_TABLE_EXISTS = f"SELECT to_regclass('{schema_version.name}') IS NOT NULL"
_MAX_VERSION = compile_statement(sa.select(sa.func.max(schema_version.c.version)),
                                 POSTGRES_DIALECT).sql
_ADD_VERSION = compile_statement(sa.insert(schema_version).values(
    version=sa.bindparam("version", type_=sa.Integer),
    applied_at_ms=sa.bindparam("applied_at_ms", type_=sa.BigInteger)), POSTGRES_DIALECT).sql
_SETUP_LOCK = "SELECT pg_advisory_xact_lock(hashtext($1))"


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
        super().__init__(settings=settings or Settings(), dialect=POSTGRES_DIALECT,
                         migrations=migrations)
        self.target = target
        self._pool_max = pool_max
        self._pool: Any = None

    # -- lifecycle ----------------------------------------------------------------------
    async def _connect_pool(self) -> Any:
        if self._pool is None:
            server_settings = ({"search_path": f'"{self.target.schema}"'}
                               if self.target.schema else None)
            try:
                self._pool = await asyncpg.create_pool(
                    self.target.dsn, min_size=POOL_MIN, max_size=self._pool_max,
                    statement_cache_size=self.target.statement_cache_size,
                    server_settings=server_settings)
            except _DRIVER_ERRORS as exc:
                raise StorageError(
                    f"cannot connect to PostgreSQL {self.target.label}: {exc}") from exc
        return self._pool

    async def setup(self) -> SchemaStatus:
        self._ensure_open()
        pool = await self._connect_pool()
        latest = mig.latest_version(self.migrations)
        try:
            async with pool.acquire() as conn:
                current = await _read_version(conn)
                found = current
                created = False
                for n, step in enumerate(mig.pending_steps(current, self.migrations)):
                    before = await self._apply_step(conn, step)
                    if n == 0:
                        found = before
                    if before is None or before < step.version:
                        created = created or step.version == 1
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: schema setup failed: "
                               f"{exc}") from exc
        return SchemaStatus(from_version=found, to_version=latest, created=created)

    async def _apply_step(self, conn: Any, step: mig.MigrationStep) -> int | None:
        """One transaction per step, serialised across processes by an advisory lock."""
        async with conn.transaction():
            await conn.execute(_SETUP_LOCK, f"stm-setup:{self.target.schema or ''}")
            # Only when missing: CREATE SCHEMA needs a privilege a deployment may not grant.
            schema = self.target.schema
            if schema and await conn.fetchval("SELECT to_regnamespace($1) IS NULL",
                                                  f'"{schema}"'):
                await conn.execute(f'CREATE SCHEMA "{schema}"')
            before = await _read_version(conn)
            mig.pending_steps(before, self.migrations)  # refuses a newer schema
            if before is not None and before >= step.version:
                return before
            await conn.execute(mig.version_table_ddl(POSTGRES_DIALECT))
            for statement in step.statements(POSTGRES_DIALECT):
                await conn.execute(statement)
            await conn.execute(_ADD_VERSION, step.version, time.time_ns() // 1_000_000)
            return before

    async def aclose(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _require_pool(self) -> Any:
        if self._pool is None:
            raise StorageError(f"PostgreSQL {self.target.label} is "
                               + ("closed" if self._closed else "not set up (call setup())"))
        return self._pool

    # -- running steps ----------------------------------------------------------------------
    async def _read(self, steps: Sequence[Step]) -> list[Any]:
        pool = self._require_pool()
        try:
            async with pool.acquire() as conn:
                if len(steps) == 1:
                    return [await _run_step(conn, steps[0])]
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    return [await _run_step(conn, s) for s in steps]
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: read failed: {exc}") from exc

    async def _write(self, steps: Sequence[Step]) -> list[Any]:
        pool = self._require_pool()
        try:
            async with pool.acquire() as conn:
                if len(steps) == 1:  # one statement commits by itself
                    return [await _run_step(conn, steps[0])]
                async with conn.transaction():
                    return [await _run_step(conn, s) for s in steps]
        except _DRIVER_ERRORS as exc:
            raise StorageError(f"PostgreSQL {self.target.label}: write failed: {exc}") from exc

    async def _upsert_rows(self, kind: str, build: Callable[[str, int | None], Any],
                           params: Sequence[Mapping[str, Any]]) -> list[Any]:
        n = len(params)
        if n == 1 or n > MAX_JOINED_UPSERTS or not _distinct_keys(params):
            return await super()._upsert_rows(kind, build, params)
        # One statement, one round trip; rows come back tagged with their position.
        compiled = self.statement((kind, n), lambda: st.multi_row(build, n))
        (rows,) = await self._write([Step(compiled, params, Want.ALL)])
        return sorted(rows, key=lambda r: r[-1])


def _distinct_keys(params: Sequence[Mapping[str, Any]]) -> bool:
    """A statement may change a row only once, so joined upserts need distinct keys."""
    keys = {(p["scope_kind"], p["server_id"], p["user_id"], p["channel_id"], p["persona_id"])
            for p in params}
    return len(keys) == len(params)
