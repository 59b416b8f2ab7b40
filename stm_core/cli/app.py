"""The ``stm`` group: global options and the subcommands."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from stm_core.cli.logs import LEVELS, configure, level_for
from stm_core.cli.state import CliState, database_url
from stm_core.settings import Settings


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used: a command
    loads its own module and what that needs, not every other command's."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module_name, attr = self.lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


#: Every subcommand, by module; they read ``ctx.obj`` (a CliState).
LAZY_COMMANDS = {
    "server": "stm_core.cli.server:server",
    "memory": "stm_core.cli.memory:memory",
    "user": "stm_core.cli.user:user",
    "context": "stm_core.cli.context:context",
    "janitor": "stm_core.cli.maintenance:janitor",
    "db": "stm_core.cli.maintenance:db",
    "config": "stm_core.cli.maintenance:config",
    "plugins": "stm_core.cli.plugins:plugins",
    "demo": "stm_core.cli.demo.command:demo",
}


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_url", envvar="STM_DATABASE_URL", metavar="URL",
              help="Database URL (sqlite+aiosqlite:///FILE, postgresql+asyncpg://..., "
                   "memory://) or a SQLite file's path. Default: $STM_DATABASE_URL, else a "
                   "per-user SQLite file.")
@click.option("--json", "json_output", is_flag=True, help="Print machine-readable JSON.")
@click.option("-v", "--verbose", count=True,
              help="Log to stderr: -v what stm does (info), -vv everything (debug).")
@click.option("--log-level", type=click.Choice(LEVELS, case_sensitive=False),
              help="Log to stderr from this level on (overrides -v).")
@click.version_option(package_name="stm-core", prog_name="stm")
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, json_output: bool, verbose: int,
        log_level: str | None) -> None:
    """Operate stm: server settings, categories, prompts, memories, janitor.

    Results go to stdout (tables, or JSON with --json); notes and errors to
    stderr. Exit codes: 0 success, 2 bad usage or a refused value, 1 a
    runtime failure (e.g. the database cannot be opened).

    \b
    Examples:
      stm server params show 1234567890
      stm --db sqlite+aiosqlite:///bot.db server categories set 1234567890 \\
          --line "Goals: where the party is headed" --yes
      stm --json memory view --server 1234567890 --channel 555 --persona 7
      stm -v user forget 42 --yes
    """
    configure(level_for(verbose, log_level))
    ctx.obj = CliState(db_url=database_url(db_url), json_output=json_output,
                       settings=Settings.from_env())

