"""SQL storage for SQLite and PostgreSQL, with one schema defined in SQLAlchemy.

SQLAlchemy defines the tables and builds every statement; each statement is
compiled once per dialect and run on the raw driver (stdlib ``sqlite3`` in a
writer thread with group commit, or an ``asyncpg`` pool), which keeps a turn's
write close to the cost of the driver itself. See ``docs/storage.md``.
"""

from __future__ import annotations

from collections.abc import Iterable

from hookspecs import hookimpl
from hookspecs.types import StorageAdapterSpec
from stm_core.settings import Settings
from stm_core.storage.protocol import StorageAdapter
from stm_plugins.sqlalchemy_storage.driver import require_asyncpg
from stm_plugins.sqlalchemy_storage.urls import (
    POSTGRES_SCHEMES,
    SQLITE_SCHEMES,
    parse_postgres_url,
    parse_sqlite_url,
)


def sqlite_factory(url: str, settings: Settings) -> StorageAdapter:
    from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter

    return SqliteAdapter(parse_sqlite_url(url), settings)


def postgres_factory(url: str, settings: Settings) -> StorageAdapter:
    target = parse_postgres_url(url)
    require_asyncpg()  # SQLite-only installs need no asyncpg: one message when it is missing
    from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter

    return PostgresAdapter(target, settings)


@hookimpl
def stm_register_storage_adapters() -> Iterable[StorageAdapterSpec]:
    return [
        StorageAdapterSpec(name="sqlite", schemes=SQLITE_SCHEMES, factory=sqlite_factory,
                           description="a SQLite file: one writer thread, group commit, WAL"),
        StorageAdapterSpec(name="postgresql", schemes=POSTGRES_SCHEMES,
                           factory=postgres_factory,
                           description="PostgreSQL through an asyncpg pool (?schema=NAME)"),
    ]
