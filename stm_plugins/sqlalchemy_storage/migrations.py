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

Rolling upgrades (docs/deployment.md): several processes share a database and
are upgraded one after the other, so the first new one migrates while old ones
still run. The contract that keeps them working:

* every step is *expand* (new tables, new nullable or defaulted columns, new
  indexes): code of the previous version neither reads nor needs what it adds
  and its writes stay valid;
* dropping or renaming (*contract*) happens only in a later step, and step
  N + 1 removes only what code of version N no longer uses; such a step says
  so (``contracts=True``): code older than N stops working at N + 1;
* so code of version N keeps working on a database at N + 1
  (:data:`COMPATIBILITY_WINDOW`); a database further ahead is refused with
  the fix.

Adding a step is one entry in :data:`MIGRATIONS`; the constants follow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import attrs

from stm_core.errors import ConfigurationError

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import Dialect

# SQLAlchemy (and the tables defined with it) is imported only when a step is
# applied: opening an up-to-date database needs neither.

log = logging.getLogger("stm.storage.migrations")


@attrs.frozen(kw_only=True)
class MigrationStep:
    """Turns a database at ``version - 1`` into one at ``version``."""

    version: int
    description: str
    #: The step's statements (DDL or data changes) for a dialect.
    statements: Callable[[Dialect], Sequence[str]]
    #: Whether it removes or renames something code of ``version - 1`` uses
    #: (a *contract* step): that code then stops at this version.
    contracts: bool = False


def _create(tables: Sequence[sa.Table], dialect: Dialect) -> list[str]:
    import sqlalchemy as sa

    out = [str(sa.schema.CreateTable(t).compile(dialect=dialect)) for t in tables]
    out += [str(sa.schema.CreateIndex(i).compile(dialect=dialect))
            for t in tables for i in sorted(t.indexes, key=lambda i: str(i.name))]
    return out


def _create_v1(dialect: Dialect) -> list[str]:
    from stm_plugins.sqlalchemy_storage.schema import V1_TABLES

    return _create(V1_TABLES, dialect)


def _v2_history_and_cache_policy(dialect: Dialect) -> list[str]:
    from stm_plugins.sqlalchemy_storage.schema import V2_TABLES, server_settings

    column = server_settings.c.cache_policy
    add = (f"ALTER TABLE {server_settings.name} ADD COLUMN {column.name} "
           f"{column.type.compile(dialect=dialect)}")
    return [add, *_create(V2_TABLES, dialect)]


def _v3_prompt_budget(dialect: Dialect) -> list[str]:
    return ["ALTER TABLE stm_server_settings ADD COLUMN prompt_budget_tokens INTEGER"]


def _v4_cold_load_indexes_per_scope(dialect: Dialect) -> list[str]:
    """Expand, though it drops two indexes: no statement of version 3 names
    them, and its cold loads (``scope_kind = 'server'`` or ``'user'``
    written out) use the new ones."""
    import sqlalchemy as sa

    from stm_plugins.sqlalchemy_storage.schema import V4_DROPPED_INDEXES, V4_INDEXES

    return [*(f"DROP INDEX {name}" for name in V4_DROPPED_INDEXES),
            *(str(sa.schema.CreateIndex(i).compile(dialect=dialect)) for i in V4_INDEXES)]


MIGRATIONS: tuple[MigrationStep, ...] = (
    MigrationStep(version=1, description="memories, server settings, categories, user prefs",
                  statements=_create_v1),
    MigrationStep(version=2, description="memory revisions (undo), per-server cache policy",
                  statements=_v2_history_and_cache_policy),
    MigrationStep(version=3, description="a server's prompt budget",
                  statements=_v3_prompt_budget),
    MigrationStep(version=4, description="cold-load indexes holding one scope's rows each",
                  statements=_v4_cold_load_indexes_per_scope),
)


#: How many versions newer than itself a database may be for this code to keep
#: working on it (when the steps in between only expand).
COMPATIBILITY_WINDOW = 1
#: The schema version this code creates and upgrades to.
SCHEMA_VERSION = MIGRATIONS[-1].version
#: The oldest schema this code writes to: it upgrades older ones on open, in
#: one transaction under a lock, while older processes keep running.
OLDEST_WRITABLE_SCHEMA = SCHEMA_VERSION
#: The newest schema this code reads and writes safely (its expand window).
NEWEST_USABLE_SCHEMA = SCHEMA_VERSION + COMPATIBILITY_WINDOW


@contextmanager
def applying(step: MigrationStep, label: str, *, upgrade: bool) -> Iterator[None]:
    """Log a step as it starts and once it is done: only the process that
    really applies it logs (the others found it applied under the lock). An
    upgrade of an existing database logs at ``INFO`` (a step that builds
    indexes on a large table tells operators why writers wait); the steps
    that create a new database at ``DEBUG``."""
    level = logging.INFO if upgrade else logging.DEBUG
    log.log(level, "schema step %d (%s) on %s: applying", step.version, step.description,
            label)
    started = time.perf_counter()
    yield
    log.log(level, "schema step %d on %s: applied in %.2f s", step.version, label,
            time.perf_counter() - started)


def version_table_ddl(dialect: Dialect) -> str:
    import sqlalchemy as sa

    from stm_plugins.sqlalchemy_storage.schema import schema_version

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

    A database newer than this code needs none while it is within the
    compatibility window (see the module's docstring); further ahead it is
    refused: this code could write rows the newer schema does not expect.
    """
    latest = latest_version(steps)
    have = current or 0
    if have > latest + COMPATIBILITY_WINDOW:
        raise ConfigurationError(
            f"the database schema is version {have} but this version of stm knows versions "
            f"up to {latest} and works on at most {latest + COMPATIBILITY_WINDOW}; "
            f"upgrade stm (refusing to touch a schema this far ahead)")
    if have > latest:
        log.warning("the database schema is version %d, newer than this stm (%d): working "
                    "within the compatibility window; upgrade stm soon", have, latest)
    return [s for s in steps if s.version > have]


@attrs.frozen(kw_only=True)
class UpgradeCheck:
    """What ``stm db upgrade`` would do to a database, and whom it would affect."""

    #: The database's version (None: no schema yet) and this code's.
    database_version: int | None
    code_version: int
    #: Versions of the steps it would apply.
    pending: tuple[int, ...]
    #: The oldest code version that keeps working on the result (None: any).
    oldest_code_after: int | None
    #: Whether processes now running (code of ``database_version``) keep working.
    running_processes_affected: bool
    #: Whether this code can open the database at all (within its window).
    usable: bool


def check_upgrade(current: int | None, steps: Sequence[MigrationStep]) -> UpgradeCheck:
    """Whether upgrading a database at ``current`` affects the processes on it.

    Processes run code of at least the database's version (older code was
    refused by it). They keep working through the upgrade when the steps only
    expand and the result is within their window.
    """
    latest = latest_version(steps)
    have = current or 0
    usable = have <= latest + COMPATIBILITY_WINDOW
    pending = tuple(s.version for s in steps if s.version > have) if usable else ()
    contracted = [s.version - 1 for s in steps if s.contracts and s.version > have]
    oldest = max([latest - COMPATIBILITY_WINDOW, *contracted]) if pending else None
    affected = current is not None and oldest is not None and have < oldest
    return UpgradeCheck(database_version=current, code_version=latest, pending=pending,
                        oldest_code_after=oldest, running_processes_affected=affected,
                        usable=usable)
