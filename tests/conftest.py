"""Shared fixtures: a controllable clock, real database URLs, an opened store.

PostgreSQL: tests that need it take ``pg_url``. It uses ``STM_TEST_POSTGRES_URL``
(e.g. ``postgresql://postgres@127.0.0.1:5432/test``) and gives each test its
own schema, dropped afterwards. Without the variable those tests skip with a
reason, unless ``STM_REQUIRE_POSTGRES=1`` (CI), where they fail.

PgBouncer: tests that take ``pgbouncer`` get a real one (transaction pooling)
in front of ``pg_url``'s database and schema. Without the ``pgbouncer``
program they skip, or fail under ``STM_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from stm_core._util.clock import ManualClock
from stm_core.settings import Settings
from stm_core.store import Stm, open_store
from tests.pgbouncer import PgBouncer, find_pgbouncer

# The plugin authors' test kit (stm_plugin_manager, register_plugin, make_turn,
# stm_memory_store, stm_clock), loaded here so its own tests use it as authors do.
pytest_plugins = ["stm_core.testing"]

PG_ENV = "STM_TEST_POSTGRES_URL"
REQUIRE_PG_ENV = "STM_REQUIRE_POSTGRES"

# Every precompiled SQLite statement is compared with its builder on first use
# (child processes inherit it), so a stale precompiled file fails the suite.
os.environ.setdefault("STM_VERIFY_PRECOMPILED_SQL", "1")


def postgres_base_url() -> str | None:
    """The configured PostgreSQL URL, or None (skip) — or a failure in CI."""
    url = os.environ.get(PG_ENV)
    if url:
        return url
    if os.environ.get(REQUIRE_PG_ENV) == "1":
        pytest.fail(f"{REQUIRE_PG_ENV}=1 but {PG_ENV} is not set", pytrace=False)
    return None


def asyncpg_dsn(url: str) -> str:
    """``postgresql+asyncpg://...`` -> ``postgresql://...`` for asyncpg itself."""
    _scheme, rest = url.split("://", 1)
    return "postgresql://" + rest


def with_schema(url: str, schema: str) -> str:
    _scheme, rest = url.split("://", 1)
    sep = "&" if "?" in rest else "?"
    return f"postgresql+asyncpg://{rest}{sep}schema={schema}"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL URL with a fresh schema of its own (dropped afterwards)."""
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"PostgreSQL tests need {PG_ENV} (e.g. postgresql://postgres@127.0.0.1/test)")
    import asyncpg

    schema = "stm_t_" + uuid.uuid4().hex[:12]
    try:
        conn = await asyncpg.connect(asyncpg_dsn(base))
    except (OSError, asyncpg.PostgresError) as exc:
        if os.environ.get(REQUIRE_PG_ENV) == "1":
            pytest.fail(f"PostgreSQL at {PG_ENV} is unreachable: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL at {PG_ENV} is unreachable: {exc}")
    try:
        yield with_schema(base, schema)
    finally:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await conn.close()


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """The same test on the in-memory adapter, a SQLite file and PostgreSQL."""
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """A real database: a SQLite file and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"
    return str(request.getfixturevalue("pg_url"))


OpenStm = Callable[..., AbstractAsyncContextManager[Stm]]


@pytest.fixture
def open_stm(clock: ManualClock) -> OpenStm:
    """``async with open_stm(url, **kwargs) as stm`` with the test clock and no
    entry-point plugins."""

    def opener(url: str, **kwargs: Any) -> AbstractAsyncContextManager[Stm]:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("load_entrypoints", False)
        kwargs.setdefault("settings", Settings())
        return open_store(url, **kwargs)

    return opener


@pytest.fixture
async def stm(open_stm: OpenStm, backend_url: str) -> AsyncIterator[Stm]:
    """An open store on each backend (memory, SQLite file, PostgreSQL)."""
    async with open_stm(backend_url) as store:
        yield store


@pytest.fixture
def pgbouncer(pg_url: str) -> Iterator[PgBouncer]:
    """A PgBouncer (transaction pooling) serving ``pg_url``'s database and schema."""
    required = os.environ.get(REQUIRE_PG_ENV) == "1"
    executable = find_pgbouncer()
    if executable is None:
        message = "the deployment tests need PgBouncer (Debian package pgbouncer)"
        if required:
            pytest.fail(f"{REQUIRE_PG_ENV}=1 but {message}", pytrace=False)
        pytest.skip(message)
    base = postgres_base_url()
    assert base is not None
    schema = parse_qs(urlsplit(pg_url).query)["schema"][0]
    # Readable by the unprivileged user PgBouncer switches to under root.
    workdir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    bouncer = PgBouncer(executable, workdir, base, schema)
    try:
        bouncer.start()
    except RuntimeError as exc:
        if required:
            pytest.fail(f"cannot start PgBouncer: {exc}", pytrace=False)
        pytest.skip(f"cannot start PgBouncer: {exc}")
    try:
        yield bouncer
    finally:
        bouncer.stop()
        for path in sorted(workdir.iterdir()):
            path.unlink()
        workdir.rmdir()
