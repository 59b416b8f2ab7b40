"""``stm db ...``, ``stm janitor`` and ``stm config export|import``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stm_core.cli.files import read_json_file, write_text_file
from stm_core.cli.output import console, emit, plain, table
from stm_core.cli.session import json_option, open_cli_store, pass_state, redact_url, with_admin
from stm_core.cli.state import CliState, run

if TYPE_CHECKING:
    from rich.console import Console


# -- db -----------------------------------------------------------------------------------
@click.group()
def db() -> None:
    """The database: create or upgrade the schema, show what is in it."""


@db.command("upgrade")
@json_option
@pass_state
def upgrade(state: CliState) -> None:
    """Create the schema, or upgrade it to the latest version.

    Every other command does this on open as well; run it on its own to
    upgrade at a chosen moment (e.g. before restarting the bots).

    \b
    Examples:
      stm db upgrade
      stm --db postgresql+asyncpg://stm@db.internal/stm db upgrade
    """
    async def go() -> dict[str, Any]:
        async with open_cli_store(state) as stm:
            status = stm.schema_status
            assert status is not None  # set by open_store
            return {"url": redact_url(state.effective_url), "created": status.created,
                    "from_version": status.from_version, "to_version": status.to_version}

    result = run(go())

    def human(out: Console) -> None:
        if result["created"] or result["from_version"] is None:
            plain(out, f"Created the schema at version {result['to_version']}.")
        elif result["from_version"] == result["to_version"]:
            plain(out, f"The schema is already at version {result['to_version']}.")
        else:
            plain(out, f"Upgraded the schema from version {result['from_version']} "
                       f"to {result['to_version']}.")

    emit(state, result, human)


@db.command("info")
@json_option
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


# -- janitor ---------------------------------------------------------------------------------
@click.command()
@json_option
@pass_state
def janitor(state: CliState) -> None:
    """Delete memory rows untouched for the retention period, once.

    The period is STM_JANITOR_RETENTION_DAYS (default 90 days); rows go in
    batches of STM_JANITOR_BATCH_SIZE so running bots are not stalled.

    \b
    Examples:
      stm janitor
      STM_JANITOR_RETENTION_DAYS=30 stm janitor
      stm --json janitor
    """
    async def go() -> int:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        async with open_cli_store(state) as stm:
            total = await stm.adapter.count_memories()
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                          TextColumn("{task.completed} removed"),
                          console=console(stderr=True), transient=True) as progress:
                task = progress.add_task("janitor", total=total or None)
                return await stm.janitor.run_once(
                    progress=lambda done: progress.update(task, completed=done))

    removed = run(go())
    days = state.settings.janitor_retention_days
    emit(state, {"removed": removed, "retention_days": days},
         lambda out: plain(out, f"Removed {removed} memory rows untouched for "
                                f"{days:g} days."))


# -- config ----------------------------------------------------------------------------------
@click.group()
def config() -> None:
    """Copy a server's configuration (not its memories) as JSON."""


@config.command("export")
@click.argument("server_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write to this file instead of stdout.")
@pass_state
def export(state: CliState, server_id: str, output: Path | None) -> None:
    """Export parameters, prompts, categories, capability and privacy as JSON.

    \b
    Examples:
      stm config export 1234567890
      stm config export 1234567890 -o server.json
    """
    exported = with_admin(state, lambda admin: admin.export_config(server_id))
    text = json.dumps(exported, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_file(output, text)
        click.echo(f"wrote {output}", err=True)


@config.command("import")
@click.argument("server_id")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_state
def import_(state: CliState, server_id: str, file: Path) -> None:
    """Apply an exported configuration to a server (validated first, in full).

    Everything the file leaves out returns to its default. Changing the
    categories clears the server's shared memories.

    \b
    Examples:
      stm config import 1234567890 server.json
      stm config export 111 | stm config import 222 /dev/stdin
    """
    data = read_json_file(file, field="file", allowed="a file written by 'stm config export'")

    result = with_admin(state, lambda admin: admin.import_config(server_id, data))
    emit(state, result, lambda out: plain(
        out, f"Imported {file} into server {server_id}: "
             f"{len(result['categories']) or 'default'} categories, "
             f"{sum(v is not None for v in result['params'].values())} parameters set."))
