"""Schema versions: creation, upgrades that keep data, refusal of schemas
beyond the compatibility window (tests/deploy/test_rolling_upgrade.py runs
code on a schema one version ahead)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import asyncpg
import pytest

from stm_core.errors import ConfigurationError
from stm_core.storage.records import MemoryKey
from stm_plugins.sqlalchemy_storage.base import SqlStorageAdapter
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS, MigrationStep
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.schema import metadata
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url, parse_sqlite_url

from .helpers import turn

LATEST = MIGRATIONS[-1].version
#: A test-only next version: a new column, filled for the rows that exist.
ADD_NOTE = MigrationStep(
    version=LATEST + 1, description="memories get a note",
    statements=lambda dialect: ["ALTER TABLE stm_memories ADD COLUMN note TEXT",
                                "UPDATE stm_memories SET note = 'from before'"])
WITH_NEXT = (*MIGRATIONS, ADD_NOTE)
#: Two versions ahead: beyond the compatibility window of this code.
ADD_TAG = MigrationStep(
    version=LATEST + 2, description="memories get a tag",
    statements=lambda dialect: ["ALTER TABLE stm_memories ADD COLUMN tag TEXT"])
WITH_TWO_NEXT = (*WITH_NEXT, ADD_TAG)
EVERY_VERSION = [(v,) for v in range(1, LATEST + 1)]


def adapter_for(url: str, migrations: Sequence[MigrationStep] = MIGRATIONS) -> SqlStorageAdapter:
    if url.startswith("sqlite"):
        return SqliteAdapter(parse_sqlite_url(url), migrations=migrations)
    return PostgresAdapter(parse_postgres_url(url), migrations=migrations)


async def fetch(url: str, sql: str) -> list[tuple[object, ...]]:
    """Read with a connection of our own, outside the adapter."""
    if url.startswith("sqlite"):
        with sqlite3.connect(parse_sqlite_url(url).path or "") as conn:
            return conn.execute(sql).fetchall()
    target = parse_postgres_url(url)
    conn = await asyncpg.connect(target.dsn, server_settings={"search_path": target.schema or ""})
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def test_upgrade_keeps_the_data(db_url: str) -> None:
    v1 = adapter_for(db_url)
    status = await v1.setup()
    assert (status.from_version, status.to_version, status.created) == (None, LATEST, True)
    written = await v1.capture(turn("c1", texts=("kept across the upgrade",)))
    await v1.aclose()

    v2 = adapter_for(db_url, WITH_NEXT)
    try:
        status = await v2.setup()
        assert (status.from_version, status.to_version, status.created) == (
            LATEST, LATEST + 1, False)
        for record in written:
            assert await v2.get_memory(record.key) == record
        after = await v2.capture(turn("c1"))
        assert after[0].rev == written[0].rev + 1
        assert await fetch(db_url, "SELECT version FROM stm_schema_version ORDER BY version") == [
            (v,) for v in range(1, LATEST + 2)]
        notes = await fetch(db_url, "SELECT note FROM stm_memories")
        assert notes == [("from before",), ("from before",)]
        again = await v2.setup()
        assert (again.from_version, again.to_version, again.created) == (
            LATEST + 1, LATEST + 1, False)
    finally:
        await v2.aclose()


async def test_a_fresh_database_replays_every_step(db_url: str) -> None:
    adapter = adapter_for(db_url, WITH_NEXT)
    try:
        status = await adapter.setup()
        assert (status.from_version, status.to_version, status.created) == (
            None, LATEST + 1, True)
        await adapter.capture(turn("c1"))
        assert await fetch(db_url, "SELECT note FROM stm_memories") == [(None,), (None,)]
    finally:
        await adapter.aclose()


async def test_a_schema_beyond_the_window_is_refused(db_url: str) -> None:
    newer = adapter_for(db_url, WITH_TWO_NEXT)
    await newer.setup()
    await newer.aclose()
    older = adapter_for(db_url)
    try:
        with pytest.raises(ConfigurationError, match=f"version {LATEST + 2}.*upgrade stm"):
            await older.setup()
    finally:
        await older.aclose()


async def test_setup_from_two_places_at_once_creates_once(db_url: str) -> None:
    adapters = [adapter_for(db_url) for _ in range(3)]
    try:
        statuses = await asyncio.gather(*(a.setup() for a in adapters))
        assert sorted(s.created for s in statuses) == [False, False, True]
        assert await fetch(db_url, "SELECT version FROM stm_schema_version ORDER BY version") == [
            (v,) for v in range(1, LATEST + 1)]
        await adapters[0].capture(turn("c1"))
        assert await adapters[2].get_memory(MemoryKey.server("g1", "c1", None)) is not None
    finally:
        for a in adapters:
            await a.aclose()


async def test_eight_openers_upgrade_at_once_and_apply_the_step_once(db_url: str) -> None:
    current = adapter_for(db_url)
    await current.setup()
    await current.capture(turn("c1"))
    await current.aclose()
    adapters = [adapter_for(db_url, WITH_NEXT) for _ in range(8)]
    try:
        statuses = await asyncio.gather(*(a.setup() for a in adapters))
        nxt = LATEST + 1
        assert {(s.from_version, s.to_version) for s in statuses} <= {(LATEST, nxt), (nxt, nxt)}
        assert sum(s.from_version == LATEST for s in statuses) == 1  # one applied it
        assert await fetch(db_url, "SELECT version FROM stm_schema_version ORDER BY 1") == [
            (v,) for v in range(1, nxt + 1)]
        assert await fetch(db_url, "SELECT DISTINCT note FROM stm_memories") == [("from before",)]
    finally:
        for a in adapters:
            await a.aclose()


async def test_migrated_schema_matches_the_table_definitions(tmp_path: Path) -> None:
    """The steps and schema.py must describe the same tables."""
    path = tmp_path / "stm.db"
    adapter = adapter_for(f"sqlite:///{path}")
    await adapter.setup()
    await adapter.aclose()
    with sqlite3.connect(path) as conn:
        for table in metadata.sorted_tables:
            columns = conn.execute(f"PRAGMA table_info({table.name})").fetchall()
            assert [(c[1], bool(c[3])) for c in columns] == [
                (c.name, not c.nullable) for c in table.columns], table.name
            indexes = {r[1] for r in conn.execute(f"PRAGMA index_list({table.name})")
                       if r[3] == "c"}
            assert indexes == {str(i.name) for i in table.indexes}, table.name


async def test_steps_must_be_numbered_in_order() -> None:
    skip = MigrationStep(version=LATEST + 2, description="gap", statements=lambda d: [])
    with pytest.raises(ValueError, match="numbered"):
        adapter_for("sqlite:///:memory:", (*MIGRATIONS, skip))



async def test_version_3_adds_the_server_prompt_budget(db_url: str) -> None:
    """A version-1 database keeps its server settings; their budget is unset."""
    v1 = adapter_for(db_url, MIGRATIONS[:1])
    await v1.setup()
    await v1.aclose()
    await fetch(db_url, "INSERT INTO stm_server_settings (server_id, refresh_cadence, "
                        "updated_at_ms, created_at_ms) VALUES ('g1', 3, 1, 1)")
    latest = adapter_for(db_url)
    try:
        status = await latest.setup()
        assert (status.from_version, status.to_version) == (1, LATEST)
        before = await latest.load_server_settings("g1")
        assert (before.refresh_cadence, before.prompt_budget_tokens) == (3, None)
        after = await latest.update_server_settings("g1", {"prompt_budget_tokens": 500},
                                                    now_ms=2)
        assert (after.refresh_cadence, after.prompt_budget_tokens) == (3, 500)
        assert await latest.load_server_settings("g1") == after
    finally:
        await latest.aclose()


async def test_an_upgrade_logs_its_steps_and_a_new_database_does_not(
        db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Operators see what an upgrade applies and how long it took (writers
    wait for it); creating a new database stays quiet at INFO."""
    caplog.set_level(logging.INFO, logger="stm.storage.migrations")
    fresh = adapter_for(db_url, MIGRATIONS[:3])
    await fresh.setup()
    await fresh.aclose()
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []
    latest = adapter_for(db_url)
    try:
        await latest.setup()
    finally:
        await latest.aclose()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(messages) == 2 and "schema step 4 (" in messages[0]
    assert messages[0].endswith("applying") and " applied in " in messages[1]
