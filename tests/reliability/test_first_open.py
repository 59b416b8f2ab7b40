"""Any number of processes may open one fresh database at the same moment:
each schema step is applied exactly once and every opener succeeds.

Eight processes open a new database together, twenty times (a new SQLite
file or PostgreSQL database each round), then the schema is checked.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from stm_core.store import open_store
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS
from tests.conftest import asyncpg_dsn, postgres_base_url

from .support import add_figure, child_command, child_env, scaled

PROCESSES = 8


def round_names(db_url: str, rounds: int) -> list[str]:
    """A fresh database per round: PostgreSQL databases named after the test's schema."""
    schema = db_url.rsplit("schema=", 1)[1]
    return [f"{schema}_r{r}" for r in range(rounds)]


def round_urls(db_url: str, tmp_path: Any, rounds: int) -> list[str]:
    if db_url.startswith("sqlite"):
        return [f"sqlite+aiosqlite:///{tmp_path / f'fresh{r}.db'}" for r in range(rounds)]
    base = postgres_base_url()
    assert base is not None
    server = urlsplit(base)
    return [urlunsplit(server._replace(scheme="postgresql+asyncpg", path=f"/{name}"))
            for name in round_names(db_url, rounds)]


async def on_databases(names: list[str], statement: str) -> None:
    """Run ``statement`` (``{}`` is the database) once per name."""
    base = postgres_base_url()
    assert base is not None
    conn = await asyncpg.connect(asyncpg_dsn(base))
    try:
        for name in names:
            await conn.execute(statement.format(f'"{name}"'))
    finally:
        await conn.close()


async def open_together(urls: list[str]) -> list[list[str]]:
    """Each round's answers of every process."""
    procs = [await asyncio.create_subprocess_exec(
        *child_command("open_worker", *urls), env=child_env(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        for _ in range(PROCESSES)]
    answers: list[list[str]] = []
    try:
        for _ in urls:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
            lines = []
            for proc in procs:
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), 120)
                assert line, (await proc.stderr.read()).decode()[-3000:]  # type: ignore[union-attr]
                lines.append(line.decode().strip())
            answers.append(lines)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
    return answers


async def test_many_processes_open_one_fresh_database_at_once(
        db_url: str, tmp_path: Any, figures: dict[str, Any]) -> None:
    rounds = scaled(20, 50)
    urls = round_urls(db_url, tmp_path, rounds)
    postgres = not db_url.startswith("sqlite")
    if postgres:
        await on_databases(round_names(db_url, rounds), "CREATE DATABASE {}")
    try:
        answers = await open_together(urls)
        failed = [a for lines in answers for a in lines if a != "ok"]
        assert failed == [], f"{len(failed)} of {rounds * PROCESSES} opens failed: {failed[:3]}"
        for url in urls:
            async with open_store(url, load_entrypoints=False,
                                  listen_for_changes=False) as stm:
                status = await stm.adapter.setup()
                assert status.from_version == status.to_version and not status.created
                stored = (await stm.admin.privacy("g")).private_channel_ids
                assert len(stored) == PROCESSES  # every opener's write, none lost
        if db_url.startswith("sqlite"):
            for url in urls:
                with sqlite3.connect(url.split("///", 1)[1]) as conn:
                    versions = conn.execute(
                        "SELECT version FROM stm_schema_version ORDER BY version").fetchall()
                assert versions == [(step.version,) for step in MIGRATIONS]  # each step once
    finally:
        if postgres:
            await on_databases(round_names(db_url, rounds), "DROP DATABASE IF EXISTS {}")
    backend = "sqlite" if db_url.startswith("sqlite") else "postgres"
    add_figure(figures, f"concurrent_first_opens_{backend}", rounds * PROCESSES)
    add_figure(figures, "concurrent_first_opens_failed", 0)
