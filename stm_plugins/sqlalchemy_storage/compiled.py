"""SQLAlchemy statements compiled once per dialect, then run on the raw driver.

SQLAlchemy builds every statement; compiling is the expensive part, so it
happens once per statement shape and the SQL string is kept. At call time a
backend only binds a plain ``dict`` of parameters:

* SQLite (stdlib ``sqlite3``): ``:name`` placeholders, the dict is passed as is;
* PostgreSQL (``asyncpg``): ``$n`` placeholders, the dict is turned into a
  positional list in the compiled order.

SQLAlchemy itself is imported only when a statement is compiled: SQLite
statements come precompiled (:mod:`.sqlite_precompiled`), so a short command
on SQLite never imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

if TYPE_CHECKING:
    from sqlalchemy.engine import Dialect
    from sqlalchemy.sql.compiler import SQLCompiler
    from sqlalchemy.sql.expression import ClauseElement

#: Separates a parameter's name from its row number in multi-row statements
#: (``channel_id__1`` is ``channel_id`` of the second row).
ROW_SEPARATOR = "__"


@attrs.frozen(kw_only=True)
class Compiled:
    """One statement's SQL for one dialect and how to bind its parameters."""

    sql: str
    #: Positional parameter names in ``$n`` order (empty for named dialects).
    names: tuple[str, ...] = ()
    #: For multi-row statements: ``(row, name)`` per positional parameter
    #: (row -1 for a constant).
    slots: tuple[tuple[int, str], ...] | None = None
    #: Values of parameters SQLAlchemy generated itself (literals it bound).
    constants: Mapping[str, Any] = attrs.field(factory=dict)

    def named(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Parameters for a ``:name`` dialect."""
        return {**self.constants, **params} if self.constants else params

    def positional(self, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[Any]:
        """Parameters for a ``$n`` dialect; a sequence of dicts for multi-row statements."""
        if self.slots is not None:
            rows: Sequence[Mapping[str, Any]] = params  # type: ignore[assignment]
            constants = self.constants
            return [rows[row][name] if row >= 0 else constants[name] for row, name in self.slots]
        one: Mapping[str, Any] = params  # type: ignore[assignment]
        constants = self.constants
        if constants:
            return [one[n] if n in one else constants[n] for n in self.names]
        return [one[n] for n in self.names]


@functools.cache
def dialect_named(name: str) -> Dialect:
    """The SQLAlchemy dialect a backend compiles for (``"sqlite"`` or ``"postgresql"``)."""
    from sqlalchemy.dialects import postgresql, sqlite

    if name == "sqlite":
        return sqlite.dialect(paramstyle="named")
    if name == "postgresql":
        return postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]
    raise ValueError(f"no SQL dialect named {name!r}")


def compile_statement(statement: ClauseElement, dialect: Dialect | str) -> Compiled:
    if isinstance(dialect, str):
        dialect = dialect_named(dialect)
    compiled = cast("SQLCompiler", statement.compile(dialect=dialect))
    constants = {name: bind.value for bind, name in compiled.bind_names.items()
                 if not bind.required}
    names = tuple(compiled.positiontup or ())
    slots = None
    if any(ROW_SEPARATOR in n for n in names):
        slots = tuple((-1, n) if n in constants else _slot(n) for n in names)
    return Compiled(sql=compiled.string, names=names, slots=slots, constants=constants)


def _slot(name: str) -> tuple[int, str]:
    base, sep, row = name.rpartition(ROW_SEPARATOR)
    if not sep or not row.isdigit():
        raise ValueError(f"multi-row statement parameter {name!r} has no row suffix")
    return int(row), base


class PrecompiledMismatch(AssertionError):
    """A precompiled statement differs from what its builder compiles to now."""


class StatementCache:
    """Compiled statements of one dialect, built on first use and kept.

    ``precompiled`` seeds the cache with SQL generated ahead of time. With
    ``verify`` (the test suite sets it) a seeded statement is still built and
    compiled on first use and must match, so a stale seed fails the tests.
    """

    def __init__(self, dialect_name: str, precompiled: Mapping[Hashable, Compiled] | None = None,
                 *, verify: bool = False) -> None:
        self.dialect_name = dialect_name
        self._precompiled = precompiled or {}
        self._verify = verify
        self._compiled: dict[Hashable, Compiled] = {} if verify else dict(self._precompiled)
        #: Seeded keys compared with their builder so far (``verify`` only).
        self.verified: set[Hashable] = set()

    def get(self, key: Hashable, build: Callable[[], ClauseElement]) -> Compiled:
        try:
            return self._compiled[key]
        except KeyError:
            compiled = compile_statement(build(), self.dialect_name)
            seeded = self._precompiled.get(key)
            if seeded is not None and seeded != compiled:
                raise PrecompiledMismatch(
                    f"precompiled {self.dialect_name} statement {key!r} is stale; regenerate "
                    f"it (python -m stm_plugins.sqlalchemy_storage.precompile)") from None
            if seeded is not None:
                self.verified.add(key)
            self._compiled[key] = compiled
            return compiled
