"""Upgrading a database that holds rows, as deployments do: from version 3 to
the latest, by several processes at once, and by a process killed while the
step builds its indexes.

Version 4 drops two indexes and builds two (``migrations``); on a table of
some size that takes a moment, long enough for a deploy to start several
processes inside it or to kill one. Each step runs in one transaction, so
the database is at version 3 with the old indexes or at version 4 with the
new ones, never between, and every row survives.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from typing import Any

import asyncpg

from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url
from tests.storage.test_migrations import adapter_for, fetch
from tests.storage.test_scope_indexes import NEW_INDEXES, OLD_INDEXES, index_names

from .support import add_figure, child_command, child_env, scaled
from .test_first_open import PROCESSES, open_together

#: Rows of the version-3 table: enough that building the indexes takes about
#: 100 ms on SQLite and on PostgreSQL here, five times the window the kills
#: aim at.
ROWS = 80_000
LINES = "[" + ",".join(['{"role":"user","content":"' + "x" * 20 + '","timestamp_ms":1}'] * 10) + "]"


async def version_3_with_rows(url: str, rows: int = ROWS) -> None:
    """A database at version 3 holding ``rows`` memory rows of both scopes."""
    old = adapter_for(url, MIGRATIONS[:3])
    await old.setup()
    await old.aclose()
    values = [("server" if k % 2 == 0 else "user", f"g{k % 7}", "" if k % 2 == 0 else f"u{k % 97}",
               f"c{k}", "", LINES, k + 1, 1, k + 1) for k in range(rows)]
    insert = ("INSERT INTO stm_memories (scope_kind, server_id, user_id, channel_id, persona_id, "
              "messages, updated_at_ms, rev, created_at_ms) VALUES ")
    if url.startswith("sqlite"):
        with sqlite3.connect(url.split("///", 1)[1]) as conn:
            conn.executemany(insert + "(?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        return
    target = parse_postgres_url(url)
    conn = await asyncpg.connect(target.dsn, server_settings={"search_path": target.schema or ""})
    try:
        await conn.executemany(insert + "($1, $2, $3, $4, $5, $6, $7, $8, $9)", values)
    finally:
        await conn.close()


async def state(url: str) -> tuple[int, set[str], int]:
    """The version, the cold-load indexes, the number of rows."""
    (version,) = (await fetch(url, "SELECT max(version) FROM stm_schema_version"))[0]
    names = await index_names(url) & (OLD_INDEXES | NEW_INDEXES)
    (count,) = (await fetch(url, "SELECT count(*) FROM stm_memories"))[0]
    return int(version), names, int(count)


async def test_processes_upgrading_one_database_at_once_apply_version_4_once(
        db_url: str) -> None:
    await version_3_with_rows(db_url)
    (answers,) = await open_together([db_url])
    assert answers == ["ok"] * PROCESSES
    version, names, count = await state(db_url)
    assert (version, names) == (MIGRATIONS[-1].version, NEW_INDEXES)
    assert await fetch(db_url, "SELECT count(*) FROM stm_schema_version WHERE version = 4") == [
        (1,)]
    # Every row of version 3, and each process's write (a settings row, not a memory).
    assert count == ROWS


async def test_a_process_killed_while_upgrading_leaves_version_3_or_4_whole(
        db_url: str, figures: dict[str, Any]) -> None:
    """Killed once its step has started (it logs that), at a random moment of
    the step's first 20 ms: the database is still at version 3, whole, and
    the next open upgrades it."""
    kills = scaled(3, 10)
    rng = random.Random(4)
    await version_3_with_rows(db_url)
    for kill in range(kills):
        if kill:
            await _back_to_version_3(db_url)
        proc = await asyncio.create_subprocess_exec(
            *child_command("open_worker", db_url), env=child_env(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"go\n")
        line = await asyncio.wait_for(proc.stderr.readline(), 60)
        assert b"schema step 4" in line and b"applying" in line, line
        await asyncio.sleep(rng.uniform(0, 0.02))
        proc.kill()
        await proc.wait()
        version, names, count = await state(db_url)
        assert (version, names, count) == (3, OLD_INDEXES, ROWS)
        # The next open finishes what the killed one did not.
        latest = adapter_for(db_url)
        try:
            status = await latest.setup()
            assert (status.from_version, status.to_version) == (3, 4)
            assert len(await latest.load_server_memories("g1", updated_since_ms=0)) > 0
        finally:
            await latest.aclose()
        assert await state(db_url) == (4, NEW_INDEXES, ROWS)
    add_figure(figures, "upgrade_kills_survived", kills)


async def _back_to_version_3(url: str) -> None:
    """Undo step 4 by hand (the rows stay), for the next kill."""
    for statement in ("DROP INDEX ix_stm_memories_server_rows",
                      "DROP INDEX ix_stm_memories_user_rows",
                      "CREATE INDEX ix_stm_memories_server ON stm_memories "
                      "(scope_kind, server_id, updated_at_ms)",
                      "CREATE INDEX ix_stm_memories_user ON stm_memories "
                      "(scope_kind, user_id, updated_at_ms)",
                      "DELETE FROM stm_schema_version WHERE version = 4"):
        await fetch(url, statement)
