"""``stm db ...``, ``stm janitor`` and ``stm config export|import``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stm_core.cli.files import read_json_file
from stm_core.cli.output import emit, note, output_option, plain, table, write_json
from stm_core.cli.safety import confirm, dry_run_option, yes_option
from stm_core.cli.session import (
    NAME_THE_DATABASE,
    json_option,
    open_cli_store,
    pass_state,
    reads_only,
    redact_url,
    sqlite_path,
    with_admin,
)
from stm_core.cli.state import CliState, default_database_path, run

if TYPE_CHECKING:
    from stm_core.cli.screen import Screen


# -- db -----------------------------------------------------------------------------------
@click.group()
def db() -> None:
    """The database: create or upgrade the schema, show what is in it."""


@db.command("upgrade")
@click.option("--check", is_flag=True,
              help="Change nothing: say what the upgrade would do and whether the "
                   "processes now running on the database would be affected (exit 1 if so).")
@json_option
@pass_state
def upgrade(state: CliState, check: bool) -> None:
    """Create the schema, or upgrade it to the latest version.

    Every other command does this on open as well; run it on its own to
    upgrade at a chosen moment (e.g. before restarting the bots). See
    docs/deployment.md for rolling upgrades.

    \b
    Examples:
      stm db upgrade --check
      stm db upgrade
      stm --db postgresql+asyncpg://stm@db.internal/stm db upgrade
    """
    if check:
        upgrade_check(state)
        return

    async def go() -> dict[str, Any]:
        async with open_cli_store(state, create=True) as stm:
            status = stm.schema_status
            assert status is not None  # set by open_store
            return {"url": redact_url(state.effective_url), "created": status.created,
                    "from_version": status.from_version, "to_version": status.to_version}

    result = run(go())

    def human(out: Screen) -> None:
        if result["created"] or result["from_version"] is None:
            plain(out, f"Created the schema at version {result['to_version']}.")
        elif result["from_version"] == result["to_version"]:
            plain(out, f"The schema is already at version {result['to_version']}.")
        else:
            plain(out, f"Upgraded the schema from version {result['from_version']} "
                       f"to {result['to_version']}.")

    emit(state, result, human)


def upgrade_check(state: CliState) -> None:
    from stm_plugins.sqlalchemy_storage import migrations as mig
    from stm_plugins.sqlalchemy_storage.version_probe import read_schema_version

    url = state.effective_url
    if state.uses_default_location and not default_database_path().exists():
        note(f"no database at the default location {default_database_path()} yet: "
             f"{NAME_THE_DATABASE}")
    found = mig.check_upgrade(run(read_schema_version(url)), mig.MIGRATIONS)
    result = {"url": redact_url(url), "database_version": found.database_version,
              "code_version": found.code_version, "pending": list(found.pending),
              "oldest_code_after": found.oldest_code_after,
              "running_processes_affected": found.running_processes_affected,
              "usable": found.usable}

    def human(out: Screen) -> None:
        have, code = found.database_version, found.code_version
        if not found.usable:
            plain(out, f"The database is at version {have}, beyond what this stm works on "
                       f"(up to {mig.NEWEST_USABLE_SCHEMA}): upgrade stm first.")
        elif have is None:
            plain(out, f"No schema yet: the upgrade would create version {code}.")
        elif not found.pending:
            plain(out, f"Nothing to do: the database is at version {have} (this stm: {code}).")
        elif found.running_processes_affected:
            plain(out, f"Upgrading from version {have} to {code} would stop processes running "
                       f"stm older than schema version {found.oldest_code_after}: upgrade "
                       f"them first or stop them.")
        else:
            plain(out, f"Upgrading from version {have} to {code} is safe for running processes:"
                       f" stm for schema {found.oldest_code_after} or newer keeps working.")

    emit(state, result, human)
    if found.running_processes_affected or not found.usable:
        raise SystemExit(1)


@db.command("info")
@json_option
@reads_only
@pass_state
def info(state: CliState) -> None:
    """Show the database URL, its storage backend, schema version and row count.

    \b
    Examples:
      stm db info
      stm --json db info
    """
    async def go() -> dict[str, Any]:
        async with open_cli_store(state) as stm:
            status = stm.schema_status
            return {"url": redact_url(state.effective_url), "backend": stm.adapter.name,
                    "schema_version": status.to_version if status else None,
                    "memory_rows": await stm.adapter.count_memories()}

    result = run(go())
    emit(state, result, lambda out: out.print(table(
        None, ("", ""), [("database", result["url"]), ("backend", result["backend"]),
                         ("schema version", result["schema_version"]),
                         ("memory rows", result["memory_rows"])], show_header=False)))


@db.command("path")
@json_option
@pass_state
def path(state: CliState) -> None:
    """Show which database the commands use: the SQLite file and whether it
    exists, or the (password-free) URL of any other database. Opens nothing.

    \b
    Examples:
      stm db path
      stm --json db path
    """
    url = state.effective_url
    file = sqlite_path(url)
    if file is not None and str(file) == ":memory:":
        file = None
    result = {"url": redact_url(url), "path": None if file is None else str(file.resolve()),
              "exists": None if file is None else file.exists(),
              "default": state.uses_default_location}

    def human(out: Screen) -> None:
        if result["path"] is None:
            plain(out, f"{result['url']} (not a file)")
            return
        missing = ("" if result["exists"] else
                   f" (does not exist yet: {NAME_THE_DATABASE}; `stm db upgrade` creates an "
                   "empty one here)" if result["default"] else
                   " (does not exist yet; `stm db upgrade` creates it)")
        plain(out, f"{result['path']}{missing}")

    emit(state, result, human)


# -- janitor ---------------------------------------------------------------------------------
@click.command()
@dry_run_option
@yes_option
@json_option
@pass_state
def janitor(state: CliState, dry_run: bool, yes: bool) -> None:
    """Delete memory rows untouched for the retention period, once.

    The period is STM_JANITOR_RETENTION_DAYS (default 90 days); rows go in
    batches of STM_JANITOR_BATCH_SIZE so running bots are not stalled.

    \b
    Examples:
      stm janitor --dry-run
      stm janitor --yes
      STM_JANITOR_RETENTION_DAYS=30 stm janitor --yes
      stm --json janitor --yes
    """
    days = state.settings.janitor_retention_days
    if dry_run:
        state.read_only = True
        would = run(_janitor_preview(state))
        emit(state, {"removed": would, "retention_days": days, "dry_run": True},
             lambda out: plain(out, f"Would remove {would} memory rows untouched for "
                                    f"{days:g} days."))
        return
    confirm(f"delete every memory row untouched for {days:g} days", yes=yes)

    async def go() -> int:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        async with open_cli_store(state) as stm:
            total = await stm.adapter.count_memories()
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                          TextColumn("{task.completed} removed"),
                          console=Console(stderr=True), transient=True) as progress:
                task = progress.add_task("janitor", total=total or None)
                return await stm.janitor.run_once(
                    progress=lambda done: progress.update(task, completed=done))

    removed = run(go())
    emit(state, {"removed": removed, "retention_days": days, "dry_run": False},
         lambda out: plain(out, f"Removed {removed} memory rows untouched for "
                                f"{days:g} days."))


async def _janitor_preview(state: CliState) -> int:
    async with open_cli_store(state) as stm:
        return await stm.janitor.would_remove()


# -- config ----------------------------------------------------------------------------------
@click.group()
def config() -> None:
    """Copy a server's configuration (not its memories) as JSON."""


@config.command("export")
@click.argument("server_id")
@output_option
@reads_only
@pass_state
def export(state: CliState, server_id: str, output: Path | None) -> None:
    """Export parameters, prompts, categories, capability and privacy as JSON.

    \b
    Examples:
      stm config export 1234567890
      stm config export 1234567890 -o server.json
    """
    write_json(with_admin(state, lambda admin: admin.export_config(server_id)), output)


@config.command("import")
@click.argument("server_id")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@dry_run_option
@yes_option
@json_option
@pass_state
def import_(state: CliState, server_id: str, file: Path, dry_run: bool, yes: bool) -> None:
    """Apply an exported configuration to a server (validated first, in full).

    Everything the file leaves out returns to its default. Changing the
    categories clears the server's shared memories.

    \b
    Examples:
      stm config import 1234567890 server.json --dry-run
      stm config import 1234567890 server.json --yes
      stm config export 111 | stm config import 222 /dev/stdin --yes
    """
    data = read_json_file(file, field="file", allowed="a file written by 'stm config export'")

    if dry_run or not yes:  # validated in full before anyone is asked
        state.read_only = dry_run
        preview = with_admin(state, lambda admin: admin.import_config(server_id, data,
                                                                      dry_run=True))
        if dry_run:
            emit(state, preview, lambda out: show_import_preview(out, preview, file))
            return
        changes = ", ".join(preview["would_change"]) or "nothing"
        clears = (" and delete its shared channel memories"
                  if preview["clears_server_memories"] else "")
        confirm(f"change {changes} of server {server_id}{clears}", yes=yes)
    result = with_admin(state, lambda admin: admin.import_config(server_id, data))
    emit(state, result, lambda out: plain(
        out, f"Imported {file} into server {server_id}: "
             f"{len(result['categories']) or 'default'} categories, "
             f"{sum(v is not None for v in result['params'].values())} parameters set."))


def show_import_preview(out: Screen, preview: dict[str, Any], file: Path) -> None:
    changes = preview["would_change"]
    if not changes:
        plain(out, f"Importing {file} into server {preview['server_id']} would change "
                   "nothing.")
        return
    plain(out, f"Importing {file} into server {preview['server_id']} would change: "
               + ", ".join(changes))
    if preview["clears_server_memories"]:
        plain(out, "and would delete the server's shared channel memories (the categories "
                   "change).")
