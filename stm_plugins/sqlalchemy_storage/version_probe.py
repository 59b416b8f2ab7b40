"""Read a database's schema version without opening a store (which would
upgrade it): what ``stm db upgrade --check`` looks at."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stm_core.errors import ConfigurationError, StorageError
from stm_plugins.sqlalchemy_storage.driver import require_asyncpg
from stm_plugins.sqlalchemy_storage.urls import (
    POSTGRES_SCHEMES,
    SQLITE_SCHEMES,
    parse_postgres_url,
    parse_sqlite_url,
)


async def read_schema_version(url: str, timeout_s: float = 10.0) -> int | None:
    """The database's schema version (``None``: no stm schema there yet)."""
    scheme = url.partition("://")[0].lower()
    if scheme in SQLITE_SCHEMES:
        return _sqlite_version(parse_sqlite_url(url).path)
    if scheme in POSTGRES_SCHEMES:
        return await _postgres_version(url, timeout_s)
    raise ConfigurationError(f"{url!r}: only SQLite and PostgreSQL databases have a schema "
                             f"version")


def _sqlite_version(path: str | None) -> int | None:
    if path is None or not Path(path).exists():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                            "AND name = 'stm_schema_version'").fetchone() is None:
                return None
            version: int | None = conn.execute(
                "SELECT max(version) FROM stm_schema_version").fetchone()[0]
            return version
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read the schema version of {path}: {exc}") from exc


async def _postgres_version(url: str, timeout_s: float) -> int | None:
    asyncpg = require_asyncpg()

    target = parse_postgres_url(url)
    table = f'"{target.schema}".stm_schema_version' if target.schema else "stm_schema_version"
    try:
        conn = await asyncpg.connect(target.dsn, timeout=timeout_s, statement_cache_size=0)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StorageError(f"cannot connect to PostgreSQL {target.label}: {exc}") from exc
    try:
        if not await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table):
            return None
        version: int | None = await conn.fetchval(f"SELECT max(version) FROM {table}")
        return version
    finally:
        await conn.close()
