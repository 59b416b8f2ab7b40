"""Schema versions and the steps between them.

``stm_schema_version`` holds one row per applied version; the highest is the
database's version. A fresh database replays every step from the first, so the
path from version 1 to the latest is the one every install takes. Each step is
applied in a transaction of its own, under a lock (SQLite ``BEGIN IMMEDIATE``;
a PostgreSQL advisory lock held from the first version read to the last step)
and after re-reading the version, so processes starting together apply it once.

To change the schema: edit :mod:`.schema`, add a step that turns the previous
version into the new one, and keep the ``V1_TABLES`` snapshot of step 1
unchanged (copy the old table definitions into it before editing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from stm_core.errors import ConfigurationError
from stm_plugins.sqlalchemy_storage.schema import (
    V1_TABLES,
    V2_TABLES,
    schema_version,
    server_settings,
)


@attrs.frozen(kw_only=True)
class MigrationStep:
    """Turns a database at ``version - 1`` into one at ``version``."""

    version: int
    description: str
    #: The step's statements (DDL or data changes) for a dialect.
    statements: Callable[[Dialect], Sequence[str]]


def _create(tables: Sequence[sa.Table], dialect: Dialect) -> list[str]:
    out = [str(sa.schema.CreateTable(t).compile(dialect=dialect)) for t in tables]
    out += [str(sa.schema.CreateIndex(i).compile(dialect=dialect))
            for t in tables for i in sorted(t.indexes, key=lambda i: str(i.name))]
    return out


def _create_v1(dialect: Dialect) -> list[str]:
    return _create(V1_TABLES, dialect)


def _v2_history_and_cache_policy(dialect: Dialect) -> list[str]:
    column = server_settings.c.cache_policy
    add = (f"ALTER TABLE {server_settings.name} ADD COLUMN {column.name} "
           f"{column.type.compile(dialect=dialect)}")
    return [add, *_create(V2_TABLES, dialect)]


MIGRATIONS: tuple[MigrationStep, ...] = (
    MigrationStep(version=1, description="memories, server settings, categories, user prefs",
                  statements=_create_v1),
    MigrationStep(version=2, description="memory revisions (undo), per-server cache policy",
                  statements=_v2_history_and_cache_policy),
)


def version_table_ddl(dialect: Dialect) -> str:
    return str(sa.schema.CreateTable(schema_version, if_not_exists=True).compile(dialect=dialect))


def latest_version(steps: Sequence[MigrationStep]) -> int:
    return steps[-1].version if steps else 0


def check_steps(steps: Sequence[MigrationStep]) -> None:
    """Steps must be numbered 1, 2, 3, … with no gap."""
    for expected, step in enumerate(steps, start=1):
        if step.version != expected:
            raise ValueError(f"migration steps must be numbered 1..n in order; "
                             f"found version {step.version} at position {expected}")


def pending_steps(current: int | None, steps: Sequence[MigrationStep]) -> list[MigrationStep]:
    """Steps a database at ``current`` (None: no schema yet) still needs.

    A database newer than this code is refused: running old code on it could
    write rows the newer schema does not expect.
    """
    latest = latest_version(steps)
    have = current or 0
    if have > latest:
        raise ConfigurationError(
            f"the database schema is version {have} but this version of stm knows versions "
            f"up to {latest}; upgrade stm (refusing to touch a newer schema)")
    return [s for s in steps if s.version > have]
