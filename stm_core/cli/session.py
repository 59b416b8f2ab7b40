"""Opening the store for one ``stm`` command."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from stm_core.cli import startup
from stm_core.cli.output import note
from stm_core.cli.state import CliState, default_database_path, run
from stm_core.errors import ConfigurationError
from stm_core.store import Stm, open_store

if TYPE_CHECKING:
    from stm_core.admin import Admin

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


#: What to do when the per-user default database is not the bot's.
NAME_THE_DATABASE = "name the bot's database with --db URL or STM_DATABASE_URL"


@asynccontextmanager
async def open_cli_store(state: CliState, *, create: bool = False) -> AsyncIterator[Stm]:
    """The store on ``--db``/``STM_DATABASE_URL``, else on the per-user default
    SQLite file (named on stderr). A command that writes creates or upgrades
    the schema on open; a read-only command never does (:func:`require_schema`):
    it refuses a database without a current schema, naming ``stm db upgrade``,
    rather than create one and show defaults. Only ``create`` (``stm db
    upgrade``) makes a default file that does not exist yet: any other command
    would put the operator's work in a new database beside the bot's."""
    if state.uses_default_location:
        use_default_location(create=create)
    if state.read_only:
        await require_schema(state.effective_url)
    # One command is short-lived: it announces its writes to running bots but
    # needs no listener of its own.
    async with open_store(state.effective_url, settings=state.settings,
                          listen_for_changes=False) as stm:
        startup.resume_collector()  # started: the command's own work collects as usual
        yield stm


def use_default_location(*, create: bool) -> None:
    """Name the default file on stderr; refuse a missing one unless ``create``,
    saying first how to name the bot's database."""
    path = default_database_path()
    if path.exists():
        note(f"using the default database {path} (set --db or STM_DATABASE_URL to change)")
        return
    if not create:
        raise ConfigurationError(f"no database at the default location {path}: "
                                 f"{NAME_THE_DATABASE} (`stm db upgrade` creates an empty "
                                 "one there)")
    path.parent.mkdir(parents=True, exist_ok=True)
    note(f"creating a new database at the default location {path} (to use the bot's "
         f"database instead, {NAME_THE_DATABASE})")


def with_admin(state: CliState, call: Callable[[Admin], Awaitable[T]]) -> T:
    """Open the store, make one admin call, close the store."""

    async def go() -> T:
        async with open_cli_store(state) as stm:
            return await call(stm.admin)

    return run(go())


async def require_schema(url: str) -> None:
    """Refuse, naming ``stm db upgrade``, a SQLite or PostgreSQL database whose
    schema opening it would create or upgrade. Looked at without opening a
    store (:mod:`~stm_plugins.sqlalchemy_storage.version_probe`), so nothing
    is written; ``memory://`` and other adapters' URLs keep nothing to check."""
    from stm_plugins.sqlalchemy_storage import migrations as mig
    from stm_plugins.sqlalchemy_storage.urls import POSTGRES_SCHEMES, SQLITE_SCHEMES
    from stm_plugins.sqlalchemy_storage.version_probe import read_schema_version

    scheme = url.partition("://")[0].lower()
    if scheme not in (*SQLITE_SCHEMES, *POSTGRES_SCHEMES):
        return
    path = sqlite_path(url)
    if path is not None:
        if str(path) == ":memory:":
            return
        if not path.exists():
            raise ConfigurationError(f"no database at {path}; `stm db upgrade` creates one")
    where = str(path) if path is not None else redact_url(url)
    version = await read_schema_version(url)
    if version is None:
        raise ConfigurationError(f"no stm schema in {where}; `stm db upgrade` creates it "
                                 "(a read command creates nothing)")
    if mig.pending_steps(version, mig.MIGRATIONS):
        raise ConfigurationError(
            f"the schema of {where} is at version {version}, older than this stm's "
            f"{mig.SCHEMA_VERSION}; `stm db upgrade` upgrades it (a read command changes "
            "nothing)")


def reads_only(func: F) -> F:
    """Mark a command as one that only reads (see :func:`require_schema`)."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        click.get_current_context().ensure_object(CliState).read_only = True
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def redact_url(url: str) -> str:
    """The URL without its password, for display."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def sqlite_path(url: str) -> Path | None:
    for prefix in ("sqlite+aiosqlite:///", "sqlite:///"):
        if url.startswith(prefix):
            return Path(url[len(prefix):].split("?", 1)[0])
    return None


def pass_state(func: F) -> F:
    """Give a command the :class:`CliState` as its first argument."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(click.get_current_context().ensure_object(CliState), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def json_option(func: F) -> F:
    """``--json`` on a subcommand too (same as the global ``stm --json``)."""

    def turn_on(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            ctx.ensure_object(CliState).json_output = True

    return click.option("--json", "json_output", is_flag=True, expose_value=False,
                        is_eager=True, callback=turn_on,
                        help="Print machine-readable JSON.")(func)
