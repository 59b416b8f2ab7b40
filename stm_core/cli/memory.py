"""``stm memory ...``: view, list, edit and clear the memory of a channel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from stm_core.cli.files import read_text_file
from stm_core.cli.output import emit, heading, note, plain, table, timestamp
from stm_core.cli.safety import confirm, dry_run_option, yes_option
from stm_core.cli.session import json_option, open_cli_store, pass_state, reads_only, with_admin
from stm_core.cli.state import CliState, run

if TYPE_CHECKING:
    from stm_core.admin.history import MemoryHistoryView, MemoryRestore
    from stm_core.admin.values import ClearResult, MemoryEdit, MemorySnapshot, PersonaMemory
    from stm_core.cli.screen import Screen

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def memory() -> None:
    """A channel's short-term memory: view, list, edit, history, undo, clear."""


#: ``--user`` of a command that writes: in a guild, whose own copy is written too.
EDITOR_HELP = ("The DM user (required with --dm); in a guild, the editor whose own copy is "
               "written too.")
#: ``--user`` of a command that only reads: a guild channel's memory is the same for all.
READER_HELP = "The DM user (required with --dm); not used for a guild channel."
#: ``--user`` of ``stm context``.
TRIGGER_HELP = "The user who triggers the turn (required); with --dm, the DM user."


def where_options_with(user_help: str) -> Callable[[F], F]:
    """``--server ID`` (a guild channel) or ``--dm`` (with ``--user``), with
    what ``--user`` means to the command."""

    def apply(func: F) -> F:
        func = click.option("--user", "user_id", metavar="ID", help=user_help)(func)
        func = click.option("--dm", is_flag=True, help="A direct-message channel.")(func)
        return click.option("--server", "server_id", metavar="ID",
                            help="The server (guild) of the channel.")(func)

    return apply


where_options = where_options_with(EDITOR_HELP)
reader_where_options = where_options_with(READER_HELP)


def resolve_where(server_id: str | None, dm: bool, user_id: str | None) -> str | None:
    if (server_id is None) == (not dm):
        raise click.UsageError("give --server ID for a guild channel or --dm for a DM")
    if dm and not user_id:
        raise click.UsageError("--dm needs --user ID")
    return server_id


def show_snapshot(out: Screen, shot: MemorySnapshot) -> None:
    persona = shot.key.persona_id or "(no persona)"
    if shot.scope == "server":
        scope = f"shared by everyone in server {shot.key.server_id}"
    else:
        scope = f"direct messages with user {shot.key.user_id}"
    heading(out, f"Persona {persona} in channel {shot.key.channel_id}")
    plain(out, f"{scope}; {shot.mode} mode; counter {shot.turns_since_refresh}; "
               f"updated {timestamp(shot.updated_at_ms)}", style="dim")
    if shot.expired:
        plain(out, "expired: older than its TTL, so it is no longer injected", style="yellow")
    out.print()
    plain(out, shot.text, style="italic" if shot.is_empty else None)
    out.print()
    if not shot.messages:
        plain(out, "No stored raw lines.", style="dim")
        return
    out.print(table(f"Stored raw lines ({len(shot.messages)}; other channels show these)",
                    ("speaker", "author id", "line", "at"),
                    [(m.speaker_name or m.role, m.author_id or "", m.content,
                      timestamp(m.timestamp_ms)) for m in shot.messages]))


@memory.command("view")
@reader_where_options
@click.option("--channel", "channel_id", required=True, metavar="ID")
@click.option("--persona", "persona_id", metavar="ID", help="The persona (omit for none).")
@json_option
@reads_only
@pass_state
def view(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
         channel_id: str, persona_id: str | None) -> None:
    """Show the memory that gets injected for a persona in a channel, and the
    raw lines stored for it (what other channels show of this one).

    \b
    Examples:
      stm memory view --server 1234567890 --channel 555 --persona 7
      stm memory view --dm --user 42 --channel 900 --persona 7
    """
    server = resolve_where(server_id, dm, user_id)

    async def go() -> MemorySnapshot:
        async with open_cli_store(state) as stm:
            return await stm.admin.view_memory(server_id=server, channel_id=channel_id,
                                               persona_id=persona_id, user_id=user_id)

    shot = run(go())
    emit(state, shot.to_dict(), lambda out: show_snapshot(out, shot))


@memory.command("list")
@reader_where_options
@click.option("--channel", "channel_id", metavar="ID",
              help="The channel (omit with --server: every channel of the server).")
@json_option
@reads_only
@pass_state
def list_personas(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
                  channel_id: str | None) -> None:
    """List the personas that have a memory or stored raw lines in a channel,
    or in every channel of a server.

    \b
    Examples:
      stm memory list --server 1234567890 --channel 555
      stm memory list --server 1234567890
      stm --json memory list --dm --user 42 --channel 900
    """
    server = resolve_where(server_id, dm, user_id)
    if channel_id is None and server is None:
        raise click.UsageError("--dm needs --channel ID")

    async def go() -> tuple[PersonaMemory, ...]:
        async with open_cli_store(state) as stm:
            return await stm.admin.list_personas(server_id=server, channel_id=channel_id,
                                                 user_id=user_id)

    found = run(go())
    where = f"channel {channel_id}" if channel_id else f"server {server}"

    def human(out: Screen) -> None:
        if not found:
            plain(out, f"Nothing is stored in {where}.")
            return
        out.print(table(f"Memories in {where}",
                        ("channel", "persona", "content", "lines", "updated"),
                        [(p.channel_id, p.persona_id or "(none)", p.mode_hint, p.lines,
                          timestamp(p.updated_at_ms)) for p in found]))

    emit(state, [p.to_dict() for p in found], human)


def parse_fields(fields: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for field in fields:
        if "=" not in field:
            raise click.UsageError(f"--field {field!r}: write LABEL=TEXT")
        name, text = field.split("=", 1)
        values[name.strip()] = text
    return values


@memory.command("edit")
@where_options
@click.option("--channel", "channel_id", required=True, metavar="ID")
@click.option("--persona", "persona_id", metavar="ID", help="The persona (omit for none).")
@click.option("--summary", help="Summary mode: the new summary.")
@click.option("--summary-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Summary mode: read the summary from a file.")
@click.option("--field", "fields", multiple=True, metavar="LABEL=TEXT",
              help="Category mode: one category's text (repeatable; label or field name).")
@click.option("--clear", is_flag=True, help="Clear the memory (in summary mode also the "
              "stored raw messages).")
@json_option
@pass_state
def edit(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
         channel_id: str, persona_id: str | None, summary: str | None,
         summary_file: Path | None, fields: tuple[str, ...], clear: bool) -> None:
    """Hand-edit the memory of a persona in a channel (the counter is kept).

    In category mode the given fields become the whole memory: categories not
    named are cleared. Texts longer than the limit (1500) are cut, like the
    model's own writes.

    \b
    Examples:
      stm memory edit --server 1234567890 --channel 555 --persona 7 \\
          --summary "The party entered the crypt."
      stm memory edit --server 1234567890 --channel 555 --persona 7 \\
          --field "Goals=Find the exit" --field "HP/MP=Alice 12/30"
      stm memory edit --dm --user 42 --channel 900 --persona 7 --clear
    """
    server = resolve_where(server_id, dm, user_id)
    if summary is not None and summary_file is not None:
        raise click.UsageError("give --summary or --summary-file, not both")
    if summary_file is not None:
        summary = read_text_file(summary_file, field="summary-file",
                                 allowed="a UTF-8 text file")
    chosen = sum((summary is not None, bool(fields), clear))
    if chosen != 1:
        raise click.UsageError("give one of --summary/--summary-file, --field or --clear")

    async def go() -> MemoryEdit:
        async with open_cli_store(state) as stm:
            values: dict[str, Any] = {}
            if clear:
                mode = (await stm.admin.categories(server)).mode if server else "summary"
                values = {"summary": ""} if mode == "summary" else {"categories": {}}
            elif fields:
                values = {"categories": parse_fields(fields)}
            else:
                values = {"summary": summary}
            return await stm.admin.edit_memory(server_id=server, channel_id=channel_id,
                                               persona_id=persona_id, user_id=user_id,
                                               **values)

    result = run(go())
    if result.truncated and not state.json_output:
        note("note: cut to the length limit: " + ", ".join(result.truncated))
    emit(state, result.to_dict(), lambda out: show_snapshot(out, result.snapshot))


def show_cleared(state: CliState, result: ClearResult, what: str, *,
                 dry_run: bool = False) -> None:
    verb = "Would remove" if dry_run else "Removed"
    emit(state, {**result.to_dict(), "dry_run": dry_run},
         lambda out: plain(out, f"{verb} {result.removed} memory rows of {what}."))


@memory.command("clear-channel")
@click.argument("channel_id")
@dry_run_option
@yes_option
@json_option
@pass_state
def clear_channel(state: CliState, channel_id: str, dry_run: bool, yes: bool) -> None:
    """Delete every memory of a channel (all scopes, users and personas).

    \b
    Examples:
      stm memory clear-channel 555 --dry-run
      stm memory clear-channel 555 --yes
    """
    if dry_run:
        state.read_only = True
        found = with_admin(state, lambda admin: admin.channel_rows(channel_id))
        show_cleared(state, found, f"channel {channel_id}", dry_run=True)
        return
    confirm(f"delete every memory of channel {channel_id}", yes=yes)
    cleared = with_admin(state, lambda admin: admin.clear_channel(channel_id))
    show_cleared(state, cleared, f"channel {channel_id}")


def memory_options_with(where: Callable[[F], F]) -> Callable[[F], F]:
    """Where the memory is: ``--server``/``--dm``, ``--channel``, ``--persona``."""

    def apply(func: F) -> F:
        func = click.option("--persona", "persona_id", metavar="ID",
                            help="The persona (omit for none).")(func)
        func = click.option("--channel", "channel_id", required=True, metavar="ID")(func)
        return where(func)

    return apply


memory_options = memory_options_with(where_options)


#: Why the revision numbers have gaps (the storage numbers a revision with its row's ``rev``).
REVISION_NUMBERS = ("Revision numbers count every write to this memory, each recorded turn "
                    "included; only summary and category changes are kept as revisions, and "
                    "only the newest of those, so the numbers have gaps.")


def show_history(out: Screen, history: MemoryHistoryView) -> None:
    heading(out, f"History of persona {history.key.persona_id or '(no persona)'} in channel "
                 f"{history.key.channel_id} (last {history.limit} kept before the current)")
    if not history.revisions:
        plain(out, "No revisions kept.", style="italic")
    for r in history.revisions:
        who = r.author if r.actor is None else f"{r.author} {r.actor}"
        extra = f", restores {r.restored_from}" if r.restored_from is not None else ""
        plain(out, f"revision {r.rev}: {who}, {timestamp(r.written_at_ms)}{extra}"
                   f"{' (current)' if r.is_current else ''}", style="bold")
        for line in r.diff or ("(same as the current memory)",):
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
            plain(out, f"  {line}", style=style)
    if history.revisions:
        out.print()
        plain(out, REVISION_NUMBERS, style="dim")


@memory.command("history")
@memory_options_with(reader_where_options)
@json_option
@reads_only
@pass_state
def history(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
            channel_id: str, persona_id: str | None) -> None:
    """List the kept revisions of a memory, each with a diff against the current one.

    Revision numbers count every write to the memory, each recorded turn
    included; only summary and category changes are kept as revisions (the
    newest STM_MEMORY_HISTORY_REVISIONS of them), so the numbers have gaps.

    \b
    Examples:
      stm memory history --server 1234567890 --channel 555 --persona 7
      stm --json memory history --dm --user 42 --channel 900 --persona 7
    """
    server = resolve_where(server_id, dm, user_id)
    result = with_admin(state, lambda admin: admin.memory_history(
        server_id=server, channel_id=channel_id, persona_id=persona_id, user_id=user_id))
    emit(state, result.to_dict(), lambda out: show_history(out, result))


def show_restore(state: CliState, result: MemoryRestore) -> None:
    def human(out: Screen) -> None:
        plain(out, f"Restored revision {result.restored_from} as revision {result.rev}.")
        show_snapshot(out, result.snapshot)

    emit(state, result.to_dict(), human)


@memory.command("undo")
@memory_options
@json_option
@pass_state
def undo(state: CliState, server_id: str | None, dm: bool, user_id: str | None,
         channel_id: str, persona_id: str | None) -> None:
    """Go back to the memory before its last rewrite (itself a new revision).

    \b
    Examples:
      stm memory undo --server 1234567890 --channel 555 --persona 7
    """
    server = resolve_where(server_id, dm, user_id)
    show_restore(state, with_admin(state, lambda admin: admin.undo_memory(
        server_id=server, channel_id=channel_id, persona_id=persona_id, user_id=user_id)))


@memory.command("restore")
@click.argument("rev", type=int)
@memory_options
@json_option
@pass_state
def restore(state: CliState, rev: int, server_id: str | None, dm: bool, user_id: str | None,
            channel_id: str, persona_id: str | None) -> None:
    """Write revision REV (from `stm memory history`) back as the current memory.

    \b
    Examples:
      stm memory restore 12 --server 1234567890 --channel 555 --persona 7
    """
    server = resolve_where(server_id, dm, user_id)
    show_restore(state, with_admin(state, lambda admin: admin.restore_memory(
        server_id=server, channel_id=channel_id, persona_id=persona_id, user_id=user_id,
        rev=rev)))
