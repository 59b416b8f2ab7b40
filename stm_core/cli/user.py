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


def names_option(command: Any) -> Any:
    return click.option(
        "--name", "names", multiple=True, metavar="NAME",
        help="A display name of the user to search for besides those on their stored "
             "lines (repeat for more).")(command)


@user.command("forget")
@click.argument("user_id")
@names_option
@dry_run_option
@yes_option
@json_option
@pass_state
def forget(state: CliState, user_id: str, names: tuple[str, ...], dry_run: bool,
           yes: bool) -> None:
    """Remove a user's memories, their lines and what names them (an erasure request).

    \b
    Removed, in every server and DM:
      - their own memory rows, with those rows' kept revisions;
      - their lines in shared channel memories and in other users' copies;
      - every other line (other people's, the bot's) whose text names them;
      - every summary and category memory that names them, now or in a kept
        revision: cleared, with that memory's whole revision history;
      - their cross-server opt-in.
    Searched for: the display names on their stored lines and those given
    with --name, their id, <@id> and <@!id> (shown in the result), as whole
    words, ignoring case.

    \b
    Not removed: lines stored without an author id (counted, see
    'unchecked_lines'), memory that names them only in other words (a
    nickname, a pronoun), the servers' settings and categories, and the
    host's own history (docs/privacy.md).

    \b
    Examples:
      stm user forget 42 --dry-run
      stm user forget 42 --yes
      stm user forget 42 --name Alice --name Ali --yes
    """
    if dry_run:
        state.read_only = True
    else:
        confirm(f"remove user {user_id}'s own memories, their lines and preferences, and "
                "clear every memory and revision that names them, everywhere", yes=yes)
    result = with_admin(state, lambda admin: admin.forget_user(user_id, dry_run=dry_run,
                                                               names=list(names)))
    verb = "Would remove" if dry_run else "Removed"
    clear = "Would clear" if dry_run else "Cleared"
    data = result.to_dict()

    def human(out: Screen) -> None:
        plain(out, f"{verb} user {user_id}'s {len(result.rows_removed)} own memory rows and "
                   f"{result.lines_removed} lines in other rows; "
                   f"stored preferences: {'yes' if result.preferences_removed else 'none'}.")
        plain(out, f"{clear} {len(result.memories_cleared)} memories that name them "
                   "(summary, categories and revision history) and removed "
                   f"{result.mention_lines_removed} other lines that name them; "
                   f"searched for {searched_sentence(data['mentions']['searched_for'])}.")
        plain(out, unchecked_sentence(result.unchecked_lines, data["unchecked_rows"]))

    emit(state, data, human)


def searched_sentence(searched: Mapping[str, Sequence[str]]) -> str:
    """The terms a privacy request looked for, and the names it could not."""
    said = ", ".join([*searched["names"], *searched["ids"]])
    if searched["names_not_searched"]:
        said += (" (not searched, too short or the default name: "
                 f"{', '.join(searched['names_not_searched'])})")
    return said


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
@names_option
@output_option
@reads_only
@pass_state
def export(state: CliState, user_id: str, names: tuple[str, ...], output: Path | None) -> None:
    """Write every stored thing about a user as JSON (an access request).

    Their own rows (summaries, categories, kept revisions, their lines and
    the bot's), their lines in other rows, the memory of other rows that
    names them ('mentions': summaries, category texts, lines and revisions),
    and their preferences; times as epoch milliseconds and ISO 8601 UTC.
    'unchecked_lines' counts the user lines in their channels stored without
    an author id (not exported: nobody can tell whose they are); a note on
    stderr says it too.

    \b
    Examples:
      stm user export 42
      stm user export 42 -o user-42.json
    """
    exported = with_admin(state, lambda admin: admin.export_user(user_id, names=list(names)))
    write_json(exported, output)
    note(unchecked_sentence(exported["unchecked_lines"], exported["unchecked_rows"]))
