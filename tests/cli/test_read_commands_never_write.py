"""No read command creates or upgrades a schema, on SQLite or PostgreSQL: each
refuses a database without a current schema, names ``stm db upgrade``, and
leaves the database as it found it (DESIGN decision 21).

The commands are walked from the ``stm`` group itself, so a new command fails
:func:`test_every_command_is_classified` until it is listed here as a read
(with the arguments of its read form) or as a write.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import click
import pytest

from stm_core.cli.app import cli
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url, parse_sqlite_url
from tests.conftest import asyncpg_dsn

from .conftest import RunStm, refused

WHERE = ("--server", "g1", "--channel", "c1")
#: Command path -> the arguments of its read-only form (after the path).
READS: dict[str, tuple[str, ...]] = {
    "config export": ("g1",),
    "config import": ("g1", "{config}", "--dry-run"),
    "context": (*WHERE, "--user", "u1"),
    "db info": (),
    "janitor": ("--dry-run",),
    "memory clear-channel": ("c1", "--dry-run"),
    "memory history": WHERE,
    "memory list": ("--server", "g1"),
    "memory view": WHERE,
    "server capability show": ("g1",),
    "server categories show": ("g1",),
    "server list": (),
    "server params show": ("g1",),
    "server privacy show": ("g1",),
    "server prompts show": ("g1",),
    "user export": ("u1",),
    "user forget": ("u1", "--dry-run"),
    "user opt-in": ("show", "u1"),
}
#: Commands that write (their read forms, if any, are in READS), or that
#: open no database of the operator's.
OTHERS = {
    "db path", "db upgrade", "demo", "plugins new",
    "memory edit", "memory restore", "memory undo",
    "server capability off", "server capability on",
    "server categories reset", "server categories set",
    "server params reset", "server params set",
    "server privacy add", "server privacy bypass", "server privacy remove",
    "server privacy set", "server prompts reset", "server prompts set",
    "user clear",
}


def leaf_commands(command: click.Command, ctx: click.Context, path: str = "") -> list[str]:
    if not isinstance(command, click.Group):
        return [path]
    found = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        assert sub is not None
        found += leaf_commands(sub, click.Context(sub, parent=ctx, info_name=name),
                               f"{path} {name}".strip())
    return found


def test_every_command_is_classified() -> None:
    leaves = set(leaf_commands(cli, click.Context(cli, info_name="stm")))
    assert not set(READS) & OTHERS
    assert leaves == set(READS) | OTHERS, "classify the new command here"


def argv(path: str, config: Path) -> list[str]:
    return [*path.split(), *(a.format(config=config) for a in READS[path])]


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    file = tmp_path / "config.json"
    file.write_text('{"format": "stm-server-config", "version": 1}', encoding="utf-8")
    return file


def sqlite_tables(db_file: Path) -> list[str]:
    with sqlite3.connect(db_file) as conn:
        return [n for (n,) in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]


@pytest.mark.parametrize("path", sorted(READS))
def test_a_missing_sqlite_file_is_refused_and_not_created(
        path: str, stm_cli: RunStm, db_file: Path, config_file: Path) -> None:
    line = refused(stm_cli(*argv(path, config_file)))
    assert line == f"stm: error: no database at {db_file}; `stm db upgrade` creates one"
    assert not db_file.exists()


@pytest.mark.parametrize("path", sorted(READS))
def test_a_sqlite_file_without_the_schema_is_left_empty(
        path: str, stm_cli: RunStm, db_file: Path, config_file: Path) -> None:
    sqlite3.connect(db_file).close()
    line = refused(stm_cli(*argv(path, config_file)))
    assert line == (f"stm: error: no stm schema in {db_file}; `stm db upgrade` creates it "
                    "(a read command creates nothing)")
    assert sqlite_tables(db_file) == []


async def old_schema(url: str) -> None:
    """A database one schema version behind this code."""
    adapter = (SqliteAdapter(parse_sqlite_url(url), migrations=MIGRATIONS[:-1])
               if url.startswith("sqlite") else
               PostgresAdapter(parse_postgres_url(url), migrations=MIGRATIONS[:-1]))
    await adapter.setup()
    await adapter.aclose()


async def schema_version(url: str) -> int | None:
    from stm_plugins.sqlalchemy_storage.version_probe import read_schema_version

    return await read_schema_version(url)


@pytest.mark.parametrize("path", sorted(READS))
async def test_an_older_schema_is_not_upgraded(path: str, stm_raw: RunStm, db_url: str,
                                               config_file: Path) -> None:
    await old_schema(db_url)
    line = refused(stm_raw("--db", db_url, *argv(path, config_file)))
    old = MIGRATIONS[-2].version
    assert f"is at version {old}, older than this stm's {MIGRATIONS[-1].version}; " \
        "`stm db upgrade` upgrades it" in line
    assert await schema_version(db_url) == old


async def schema_exists(url: str) -> bool:
    target = parse_postgres_url(url)
    conn = await asyncpg.connect(asyncpg_dsn(url.split("?", 1)[0]))
    try:
        return bool(await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL",
                                        f'"{target.schema}"'))
    finally:
        await conn.close()


@pytest.mark.parametrize("path", sorted(READS))
async def test_a_fresh_postgresql_database_gets_no_schema(
        path: str, stm_raw: RunStm, pg_url: str, config_file: Path) -> None:
    line = refused(stm_raw("--db", pg_url, *argv(path, config_file)))
    assert line.startswith("stm: error: no stm schema in postgresql")
    assert line.endswith("; `stm db upgrade` creates it (a read command creates nothing)")
    assert not await schema_exists(pg_url)


async def test_the_issue_sequence_on_postgresql(stm_raw: RunStm, pg_url: str) -> None:
    """``upgrade --check`` says no schema; a read does not create one; the
    upgrade then creates it."""
    assert "No schema yet" in stm_raw("--db", pg_url, "db", "upgrade", "--check").stdout
    refused(stm_raw("--db", pg_url, "server", "params", "show", "1"))
    done = stm_raw("--db", pg_url, "db", "upgrade")
    assert done.code == 0 and "Created the schema" in done.stdout
