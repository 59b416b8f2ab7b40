"""SQLAlchemy statements compiled once per dialect, then run on the raw driver.

SQLAlchemy builds every statement; compiling is the expensive part, so it
happens once per statement shape and the SQL string is kept. At call time a
backend only binds a plain ``dict`` of parameters:

* SQLite (stdlib ``sqlite3``): ``:name`` placeholders, the dict is passed as is;
* PostgreSQL (``asyncpg``): ``$n`` placeholders, the dict is turned into a
  positional list in the compiled order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, cast

import attrs
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

SQLITE_DIALECT: Dialect = sqlite.dialect(paramstyle="named")
POSTGRES_DIALECT: Dialect = postgresql.asyncpg.dialect()  # type: ignore[no-untyped-call]

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


def compile_statement(statement: ClauseElement, dialect: Dialect) -> Compiled:
    compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
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


class StatementCache:
    """Compiled statements of one dialect, built on first use and kept."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._compiled: dict[Hashable, Compiled] = {}

    def get(self, key: Hashable, build: Callable[[], ClauseElement]) -> Compiled:
        try:
            return self._compiled[key]
        except KeyError:
            compiled = compile_statement(build(), self.dialect)
            self._compiled[key] = compiled
            return compiled
