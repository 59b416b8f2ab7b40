"""Writes :mod:`.sqlite_precompiled`: the SQLite statements' SQL, compiled ahead.

Opening a SQLite store and running the usual reads and writes then needs no
SQLAlchemy at run time (importing it is most of a short command's start-up).
Statements not listed here (multi-category config imports, several settings
columns at once) are still compiled on first use.

Run ``python -m stm_plugins.sqlalchemy_storage.precompile`` after changing
:mod:`.statements` or :mod:`.schema`; a test fails while the file is stale, and
with ``STM_VERIFY_PRECOMPILED_SQL`` set every seeded statement is compared
with its builder on first use.
"""

from __future__ import annotations

import itertools
import pathlib
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import sqlalchemy as sa

from stm_core.storage.records import SERVER_SETTING_FIELDS
from stm_plugins.sqlalchemy_storage import statements as st
from stm_plugins.sqlalchemy_storage.codec import FILTER_FIELDS, SCOPE_LITERALS
from stm_plugins.sqlalchemy_storage.compiled import Compiled, compile_statement
from stm_plugins.sqlalchemy_storage.schema import schema_version

DIALECT = "sqlite"
TARGET = pathlib.Path(__file__).with_name("sqlite_precompiled.py")

_NO_ARGUMENT = ("settings_row", "categories_rows", "server_rows", "prefs_row", "user_rows",
                "get_row", "count_rows", "revision_insert", "revision_trim", "revision_rows",
                "categories_delete", "categories_insert", "delete_server_rows", "purge")


def builders() -> Iterator[tuple[Hashable, Callable[[], Any]]]:
    """Each statement key as ``SqlStorageAdapter`` asks for it, with its builder."""
    for name in _NO_ARGUMENT:
        yield name, getattr(st, name)
    yield ("capture",), lambda: st.capture_upsert(DIALECT, None)
    yield ("write",), lambda: st.write_upsert(DIALECT, None)
    yield "private_channels_upsert", lambda: st.private_channels_upsert(DIALECT)
    yield "prefs_upsert", lambda: st.prefs_upsert(DIALECT)
    for columns in [(), *((c,) for c in SERVER_SETTING_FIELDS)]:
        yield ("settings_upsert", columns), (
            lambda c=columns: st.settings_upsert(DIALECT, c))  # type: ignore[misc]
    for shape in itertools.product((False, True), repeat=3):
        yield (("newest_server_rows", *shape),
               lambda s=shape: st.newest_server_rows(DIALECT, *s))  # type: ignore[misc]
    for fields in _filter_keys():
        yield ("list_rows", fields), lambda f=fields: st.list_rows(DIALECT, f)  # type: ignore[misc]
        yield ("delete_rows", fields), lambda f=fields: st.delete_rows(f)  # type: ignore[misc]


def _filter_keys() -> Iterator[tuple[str, ...]]:
    """Every filter's statement key: each set of fields, its scope (when it
    has one) either of the two written out (``codec.filter_params``)."""
    for n in range(1, len(FILTER_FIELDS) + 1):
        for fields in itertools.combinations(FILTER_FIELDS, n):
            if "scope_kind" not in fields:
                yield fields
                continue
            for literal in SCOPE_LITERALS:
                yield tuple(literal if f == "scope_kind" else f for f in fields)


def version_statements() -> dict[str, str]:
    """The schema-version queries a backend runs before any statement."""
    return {
        "HAS_VERSION_TABLE": ("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                              f"AND name = '{schema_version.name}'"),
        "MAX_VERSION": compile_statement(sa.select(sa.func.max(schema_version.c.version)),
                                         DIALECT).sql,
        "ADD_VERSION": compile_statement(sa.insert(schema_version).values(
            version=sa.bindparam("version"), applied_at_ms=sa.bindparam("applied_at_ms")),
            DIALECT).sql,
    }


def _compiled_source(compiled: Compiled) -> str:
    extra = f", constants={compiled.constants!r}" if compiled.constants else ""
    if compiled.names or compiled.slots is not None:
        raise ValueError("a named-parameter dialect has no positional names")
    return f"Compiled(sql={compiled.sql!r}{extra})"


def render() -> str:
    """The module's source, as it should be now."""
    lines = ['"""SQLite SQL compiled ahead by :mod:`.precompile`; do not edit by hand."""',
             "# ruff: noqa: E501", "",
             "from __future__ import annotations", "",
             "from collections.abc import Hashable", "",
             "from stm_plugins.sqlalchemy_storage.compiled import Compiled", ""]
    lines += [f"{name} = {sql!r}" for name, sql in version_statements().items()]
    lines += ["", "STATEMENTS: dict[Hashable, Compiled] = {"]
    for key, build in builders():
        lines.append(f"    {key!r}: {_compiled_source(compile_statement(build(), DIALECT))},")
    lines += ["}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    TARGET.write_text(render(), encoding="utf-8")
    print(f"wrote {TARGET.name}")
