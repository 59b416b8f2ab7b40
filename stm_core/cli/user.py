"""``stm user ...``: a user's cross-server opt-in and their own memories."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from stm_core.cli.memory import show_cleared
from stm_core.cli.output import emit, on_off, plain
from stm_core.cli.session import json_option, open_cli_store, pass_state, with_admin
from stm_core.cli.state import CliState, run

if TYPE_CHECKING:
    from stm_core.admin.values import UserOptIn


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
    async def go() -> UserOptIn:
        async with open_cli_store(state) as stm:
            if action == "show":
                return await stm.admin.user_opt_in(user_id)
            return await stm.admin.set_user_opt_in(user_id, opt_in=action == "on")

    show_opt_in(state, run(go()))


@user.command("clear")
@click.argument("user_id")
@json_option
@pass_state
def clear(state: CliState, user_id: str) -> None:
    """Delete a user's own memories (their DM and cross-server copies).

    Memories shared by a whole server channel are not touched; use
    'stm memory clear-channel' for those.

    \b
    Examples:
      stm user clear 42
    """
    cleared = with_admin(state, lambda admin: admin.clear_user(user_id))
    show_cleared(state, cleared, f"user {user_id}")
