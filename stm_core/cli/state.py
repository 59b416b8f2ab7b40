"""What every ``stm`` subcommand shares: the database URL and the output mode."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from stm_core.errors import ValidationError
from stm_core.plugins.storage import database_url as url_of
from stm_core.settings import Settings

T = TypeVar("T")

APP_DIR_NAME = "stm"


def default_database_path() -> Path:
    """An embedded SQLite file in the per-user data directory
    (``$XDG_DATA_HOME/stm/stm.db``, else ``~/.local/share/stm/stm.db``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_DIR_NAME / "stm.db"


def default_database_url() -> str:
    return url_of(str(default_database_path()))


@attrs.define(kw_only=True)
class CliState:
    """Set by the ``stm`` group on ``ctx.obj``; read by every subcommand."""

    #: From ``--db`` or ``STM_DATABASE_URL``; ``None`` means the default file.
    db_url: str | None = None
    json_output: bool = False
    settings: Settings = attrs.field(factory=Settings)
    #: Set by read-only commands: a SQLite file that does not exist is refused
    #: instead of being created empty.
    read_only: bool = False

    @property
    def effective_url(self) -> str:
        return self.db_url or default_database_url()

    @property
    def uses_default_location(self) -> bool:
        return self.db_url is None


def database_url(value: str | None) -> str | None:
    """``--db`` as typed: a URL, or a bare path (``bot.db``), taken as a SQLite file."""
    return url_of(value) if value else None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion from a synchronous click command.
    A refused value is named by the option the operator typed."""
    try:
        return asyncio.run(coro)
    except ValidationError as exc:
        name_the_option(exc)
        raise


def name_the_option(exc: ValidationError) -> None:
    """Name the current command's option (``--cadence``) where a refusal starts
    with the API field behind it (``refresh_cadence must be ...``)."""
    ctx = click.get_current_context(silent=True)
    message = str(exc)
    if ctx is None or not exc.field or not re.match(rf"{re.escape(exc.field)}\b", message):
        return
    for param in ctx.command.params:
        if isinstance(param, click.Option) and param.name == exc.field:
            flag = max(param.opts, key=len)
            exc.args = (flag + message[len(exc.field):], *exc.args[1:])
            exc.field = flag
            return
