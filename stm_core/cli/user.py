"""``stm user ...``: a user's cross-server opt-in and their own memories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from stm_core.cli.memory import show_cleared
from stm_core.cli.output import emit, note, on_off, output_option, plain, write_json
from stm_core.cli.safety import confirm, dry_run_option, yes_option
from stm_core.cli.session import json_option, open_cli_store, pass_state, reads_only, with_admin
from stm_core.cli.state import CliState, run

if TYPE_CHECKING:
    from stm_core.admin.values import UserOptIn
    from stm_core.cli.screen import Screen


@click.group()
def user() -> None:
    """A user's cross-server opt-in and memories."""


def show_opt_in(state: CliState, result: UserOptIn) -> None:
    emit(state, result.to_dict(), lambda out: plain(
        out, f"User {result.user_id}: memories from other servers and DMs "
             f"{on_off(result.crossserver_opt_in)}"))


@user.command("opt-in")
@click.argument("action", type=click.Choice(["on", "off", "show"]))
@click.argument("user_id")
@json_option
@pass_state
def opt_in(state: CliState, action: str, user_id: str) -> None:
    """Show or set whether a user's memories follow them across servers.

    \b
    Examples:
      stm user opt-in show 42
      stm user opt-in on 42
      stm user opt-in off 42
    """
    state.read_only = action == "show"

    async def go() -> UserOptIn:
        async with open_cli_store(state) as stm:
            if action == "show":
                return await stm.admin.user_opt_in(user_id)
            return await stm.admin.set_user_opt_in(user_id, opt_in=action == "on")

    show_opt_in(state, run(go()))


@user.command("clear")
@click.argument("user_id")
@yes_option
@json_option
@pass_state
def clear(state: CliState, user_id: str, yes: bool) -> None:
    """Delete a user's own memories (their DM and cross-server copies).

    Memories shared by a whole server channel are not touched; use
    'stm user forget' to remove the user's lines from those too.

    \b
    Examples:
      stm user clear 42 --yes
    """
    confirm(f"delete user {user_id}'s own memories", yes=yes)
    cleared = with_admin(state, lambda admin: admin.clear_user(user_id))
    show_cleared(state, cleared, f"user {user_id}")


@user.command("forget")
@click.argument("user_id")
@dry_run_option
@yes_option
@json_option
@pass_state
def forget(state: CliState, user_id: str, dry_run: bool, yes: bool) -> None:
    """Remove everything stored of a user, everywhere (an erasure request).

    Their own rows in every server and DM, their lines in shared channel
    memories and in other users' copies, their cross-server opt-in. Lines
    stored without an author id cannot be attributed: the result counts those
    in the user's channels ('unchecked_lines'; see docs/privacy.md).

    \b
    Examples:
      stm user forget 42 --dry-run
      stm user forget 42 --yes
    """
    if dry_run:
        state.read_only = True
    else:
        confirm(f"remove everything stored of user {user_id}, everywhere", yes=yes)
    result = with_admin(state, lambda admin: admin.forget_user(user_id, dry_run=dry_run))
    verb = "Would remove" if dry_run else "Removed"
    data = result.to_dict()

    def human(out: Screen) -> None:
        plain(out, f"{verb} user {user_id}'s {len(result.rows_removed)} own memory rows and "
                   f"{result.lines_removed} lines in {len(result.rows_changed)} other rows; "
                   f"stored preferences: {'yes' if result.preferences_removed else 'none'}.")
        plain(out, unchecked_sentence(result.unchecked_lines, data["unchecked_rows"]))

    emit(state, data, human)


def unchecked_sentence(lines: int, rows: Sequence[Mapping[str, Any]]) -> str:
    """What erasure and export could not check, and what the operator can do."""
    if not lines:
        return "No line in their channels lacks an author id: every line was checked."
    channels = ", ".join(sorted({str(row["channel_id"]) for row in rows}))
    return (f"{lines} user lines in {len(rows)} rows of their channels ({channels}) carry no "
            "author id and could not be checked; 'stm memory clear-channel CHANNEL --yes' "
            "removes them now (docs/privacy.md, \"Lines without an author id\").")


@user.command("export")
@click.argument("user_id")
@output_option
@reads_only
@pass_state
def export(state: CliState, user_id: str, output: Path | None) -> None:
    """Write every stored thing about a user as JSON (an access request).

    Their own rows (summaries, categories, raw lines), their lines in other
    rows, and their preferences. 'unchecked_lines' counts the user lines in
    their channels stored without an author id (not exported: nobody can
    tell whose they are); a note on stderr says it too.

    \b
    Examples:
      stm user export 42
      stm user export 42 -o user-42.json
    """
    exported = with_admin(state, lambda admin: admin.export_user(user_id))
    write_json(exported, output)
    note(unchecked_sentence(exported["unchecked_lines"], exported["unchecked_rows"]))
