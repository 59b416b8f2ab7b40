"""``stm server ...``: parameters, prompts, categories, privacy, capability."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from stm_core.cli.files import read_text_file
from stm_core.cli.output import emit, heading, note, on_off, plain, table
from stm_core.cli.safety import confirm, yes_option
from stm_core.cli.session import json_option, open_cli_store, pass_state, reads_only, with_admin
from stm_core.cli.state import CliState, run
from stm_core.settings import CACHE_POLICIES

if TYPE_CHECKING:
    from stm_core.admin.values import (
        Capability,
        PrivacySettings,
        ServerCategories,
        ServerParams,
        ServerPrompts,
    )
    from stm_core.cli.screen import Screen


@click.group()
def server() -> None:
    """Per-server settings: parameters, prompts, categories, privacy, capability."""


@server.command("list")
@json_option
@reads_only
@pass_state
def list_servers(state: CliState) -> None:
    """List the servers with stored settings or shared channel memories.

    \b
    Examples:
      stm server list
      stm --json server list
    """
    found = with_admin(state, lambda admin: admin.list_servers())

    def human(out: Screen) -> None:
        if not found:
            plain(out, "No server has stored settings or memories.")
            return
        for server_id in found:
            plain(out, server_id)

    emit(state, list(found), human)


# -- parameters -------------------------------------------------------------------
@server.group()
def params() -> None:
    """Cadence, render mode, crude message count and injection depths."""


def show_params(state: CliState, result: ServerParams) -> None:
    def human(out: Screen) -> None:
        rows = [(name, getattr(result, name), result.labels[name], _source(result, name))
                for name in result.labels]
        out.print(table(f"Parameters of server {result.server_id}",
                        ("parameter", "value", "meaning", "source"), rows))

    emit(state, result.to_dict(), human)


def _source(result: ServerParams, name: str) -> str:
    if name in result.unavailable:
        return f"default (stored {result.unavailable[name]!r} is not installed)"
    return "default" if name in result.defaults else "set"


@params.command("show")
@click.argument("server_id")
@json_option
@reads_only
@pass_state
def params_show(state: CliState, server_id: str) -> None:
    """Show the effective parameters (defaults included, and marked).

    \b
    Examples:
      stm server params show 1234567890
      stm --json server params show 1234567890
    """
    result = with_admin(state, lambda admin: admin.server_params(server_id))
    if result.defaults >= result.labels.keys():
        note(f"Nothing is stored for server {server_id}: every parameter shown is the "
             "default.")
    show_params(state, result)


@params.command("set")
@click.argument("server_id")
@click.option("--cadence", "refresh_cadence", type=int,
              help="Nudge after this many bot turns without a memory update (1-100).")
@click.option("--render-mode", help="How other channels' memories show (crude_summary, "
              "supersede, or a plugin's mode).")
@click.option("--crude-messages", "crude_message_count", type=int,
              help="Raw lines shown per other channel (1-max messages per channel).")
@click.option("--nudge-depth", "nudge_injection_depth", type=int,
              help="Dialogue turns from the bottom where the nudge goes (0-20; 0 = tail).")
@click.option("--content-depth", "content_injection_depth", type=int,
              help="Where the memory block goes (-1-20; -1 = anchored near the top).")
@click.option("--cache-policy", type=click.Choice(CACHE_POLICIES),
              help="freshness (ages, block moves when fresh) or stable (keeps provider "
                   "prompt caches warm).")
@click.option("--budget", "prompt_budget_tokens", type=int,
              help="Tokens of a turn's short-term memory block (0-1000000; 0 = no budget).")
@json_option
@pass_state
def params_set(state: CliState, server_id: str, refresh_cadence: int | None,
               render_mode: str | None, crude_message_count: int | None,
               nudge_injection_depth: int | None, content_injection_depth: int | None,
               cache_policy: str | None, prompt_budget_tokens: int | None) -> None:
    """Set any of the parameters; the others keep their values.

    \b
    Examples:
      stm server params set 1234567890 --cadence 3
      stm server params set 1234567890 --render-mode supersede --nudge-depth 0
      stm server params set 1234567890 --content-depth -1
      stm server params set 1234567890 --cache-policy stable
      stm server params set 1234567890 --budget 800
    """
    show_params(state, with_admin(state, lambda admin: admin.set_server_params(
        server_id, refresh_cadence=refresh_cadence, render_mode=render_mode,
        crude_message_count=crude_message_count,
        nudge_injection_depth=nudge_injection_depth,
        content_injection_depth=content_injection_depth, cache_policy=cache_policy,
        prompt_budget_tokens=prompt_budget_tokens)))


#: The options of ``params set`` and the parameters they set; ``reset --only``
#: takes the same names (with or without ``--``) or the parameter names.
PARAM_OPTIONS = {
    "cadence": "refresh_cadence",
    "render-mode": "render_mode",
    "crude-messages": "crude_message_count",
    "nudge-depth": "nudge_injection_depth",
    "content-depth": "content_injection_depth",
    "cache-policy": "cache_policy",
    "budget": "prompt_budget_tokens",
}


def param_name(given: str) -> str:
    name = given.strip().removeprefix("--")
    if name in PARAM_OPTIONS.values():
        return name
    if name in PARAM_OPTIONS:
        return PARAM_OPTIONS[name]
    raise click.BadParameter(f"unknown parameter {given!r}; use one of: "
                             + ", ".join(PARAM_OPTIONS), param_hint="--only")


@params.command("reset")
@click.argument("server_id")
@click.option("--only", "names", multiple=True, metavar="NAME",
              help="Reset only this parameter (repeatable): the name of its option in "
                   "'params set' (cadence, render-mode, crude-messages, nudge-depth, "
                   "content-depth).")
@json_option
@pass_state
def params_reset(state: CliState, server_id: str, names: tuple[str, ...]) -> None:
    """Return parameters to their defaults (all of them unless --only is given).

    \b
    Examples:
      stm server params reset 1234567890
      stm server params reset 1234567890 --only nudge-depth --only cadence
    """
    chosen = tuple(dict.fromkeys(param_name(n) for n in names))
    show_params(state, with_admin(
        state, lambda admin: admin.reset_server_params(server_id, names=chosen or None)))


# -- prompts ------------------------------------------------------------------------
@server.group()
def prompts() -> None:
    """The tool description and the nudge (overrides of the defaults)."""


def show_prompts(state: CliState, result: ServerPrompts) -> None:
    def human(out: Screen) -> None:
        for title, prompt in (("Tool description", result.tool_description),
                              ("Nudge", result.nudge)):
            source = "default" if prompt.is_default else "custom"
            heading(out, f"{title} ({source}, {result.mode} mode)")
            plain(out, prompt.text)
            out.print()

    emit(state, result.to_dict(), human)


def read_text(text: str | None, path: Path | None, name: str) -> str | None:
    if text is not None and path is not None:
        raise click.UsageError(f"give --{name} or --{name}-file, not both")
    if path is not None:
        return read_text_file(path, field=name, allowed="a UTF-8 text file")
    return text


@prompts.command("show")
@click.argument("server_id")
@json_option
@reads_only
@pass_state
def prompts_show(state: CliState, server_id: str) -> None:
    """Show both prompts: the override, or the default for the server's mode.

    \b
    Examples:
      stm server prompts show 1234567890
    """
    show_prompts(state, with_admin(state, lambda admin: admin.prompts(server_id)))


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@prompts.command("set")
@click.argument("server_id")
@click.option("--nudge", help="The nudge text (blank resets it to the default).")
@click.option("--nudge-file", type=_FILE, help="Read the nudge from a file.")
@click.option("--tool-description", help="The tool description (blank resets it).")
@click.option("--tool-description-file", type=_FILE,
              help="Read the tool description from a file.")
@json_option
@pass_state
def prompts_set(state: CliState, server_id: str, nudge: str | None, nudge_file: Path | None,
                tool_description: str | None, tool_description_file: Path | None) -> None:
    """Override the nudge and/or the tool description (at most 4000 characters).

    Placeholders are plain {name}; {short_term_memory_tool}, {memory_tool} and
    {category_labels} are filled in when the prompt is used.

    \b
    Examples:
      stm server prompts set 1234567890 --nudge "[System: Refresh {short_term_memory_tool}.]"
      stm server prompts set 1234567890 --tool-description-file description.txt
    """
    nudge_text = read_text(nudge, nudge_file, "nudge")
    description = read_text(tool_description, tool_description_file, "tool-description")
    if nudge_text is None and description is None:
        raise click.UsageError("give --nudge/--nudge-file and/or "
                               "--tool-description/--tool-description-file")

    show_prompts(state, with_admin(state, lambda admin: admin.set_prompts(
        server_id, nudge=nudge_text, tool_description=description)))


@prompts.command("reset")
@click.argument("server_id")
@click.option("--nudge", "only_nudge", is_flag=True, help="Reset only the nudge.")
@click.option("--tool-description", "only_description", is_flag=True,
              help="Reset only the tool description.")
@json_option
@pass_state
def prompts_reset(state: CliState, server_id: str, only_nudge: bool,
                  only_description: bool) -> None:
    """Return the prompts to their defaults (both unless one is named).

    \b
    Examples:
      stm server prompts reset 1234567890
      stm server prompts reset 1234567890 --nudge
    """
    both = not only_nudge and not only_description

    show_prompts(state, with_admin(state, lambda admin: admin.reset_prompts(
            server_id, nudge=both or only_nudge,
            tool_description=both or only_description)))


# -- categories -------------------------------------------------------------------------
@server.group()
def categories() -> None:
    """Memory categories ("label: description"); one tool field each."""


def show_categories(state: CliState, result: ServerCategories) -> None:
    def human(out: Screen) -> None:
        title = (f"Categories of server {result.server_id} ({result.mode} mode"
                 + (", default" if result.is_default else "") + ")")
        rows = [(c.position, c.label, c.slug, c.description) for c in result.categories]
        out.print(table(title, ("#", "label", "field", "description"), rows))
        if result.cleared_memories:
            plain(out, f"{result.cleared_memories} server memory rows cleared "
                       "(their fields no longer match).")

    emit(state, result.to_dict(), human)


@categories.command("show")
@click.argument("server_id")
@json_option
@reads_only
@pass_state
def categories_show(state: CliState, server_id: str) -> None:
    """Show the categories (the single default "summary" when none are set).

    \b
    Examples:
      stm server categories show 1234567890
    """
    show_categories(state, with_admin(state, lambda admin: admin.categories(server_id)))


@categories.command("set")
@click.argument("server_id")
@click.option("--line", "lines", multiple=True, metavar='"LABEL: DESCRIPTION"',
              help="One category (repeatable, in order).")
@click.option("--file", "file", type=_FILE,
              help="Read categories from a file, one 'label: description' per line.")
@yes_option
@json_option
@pass_state
def categories_set(state: CliState, server_id: str, lines: tuple[str, ...],
                   file: Path | None, yes: bool) -> None:
    """Replace all categories (at most 5). Clears the server's shared memories.

    Each category is "label: description", split at the first colon. With
    only blank lines the single default "summary" category comes back.

    \b
    Examples:
      stm server categories set 1234567890 --line "Goals: where the party is headed" \\
          --line "HP/MP: health and mana of each member"
      stm server categories set 1234567890 --file categories.txt --yes
    """
    if bool(lines) == (file is not None):
        raise click.UsageError("give --line (repeatable) or --file")
    source: str | tuple[str, ...] = (
        read_text_file(file, field="file", allowed="a UTF-8 text file of 'label: description' "
                       "lines") if file is not None else lines)
    confirm(f"replace the categories of server {server_id} and delete its shared channel "
            "memories", yes=yes)

    show_categories(state, with_admin(state, lambda admin: admin.set_categories(server_id, source)))


@categories.command("reset")
@click.argument("server_id")
@yes_option
@json_option
@pass_state
def categories_reset(state: CliState, server_id: str, yes: bool) -> None:
    """Back to the single default "summary" category (clears shared memories).

    \b
    Examples:
      stm server categories reset 1234567890
      stm server categories reset 1234567890 --yes
    """
    confirm(f"reset the categories of server {server_id} and delete its shared channel "
            "memories", yes=yes)
    show_categories(state, with_admin(state, lambda admin: admin.reset_categories(server_id)))


# -- privacy ------------------------------------------------------------------------------
@server.group()
def privacy() -> None:
    """Private channels (their memories stay in them) and the bypass."""


def show_privacy(state: CliState, result: PrivacySettings) -> None:
    def human(out: Screen) -> None:
        channels = ", ".join(result.private_channel_ids) or "(none)"
        plain(out, f"Server {result.server_id}")
        plain(out, f"Private channels: {channels}")
        plain(out, f"Privacy bypass: {on_off(result.privacy_bypass)}")

    emit(state, result.to_dict(), human)


def _privacy_command(name: str, doc: str) -> click.Command:
    @click.argument("server_id")
    @click.argument("channel_ids", nargs=-1)
    @json_option
    @pass_state
    def command(state: CliState, server_id: str, channel_ids: tuple[str, ...]) -> None:
        if name != "set" and not channel_ids:
            raise click.UsageError(f"give at least one CHANNEL_ID to {name}")

        async def go() -> PrivacySettings:
            async with open_cli_store(state) as stm:
                admin = stm.admin
                change = {"set": admin.set_private_channels, "add": admin.add_private_channels,
                          "remove": admin.remove_private_channels}[name]
                return await change(server_id, channel_ids=channel_ids)

        show_privacy(state, run(go()))

    command.__doc__ = doc
    return privacy.command(name)(command)


@privacy.command("show")
@click.argument("server_id")
@json_option
@reads_only
@pass_state
def privacy_show(state: CliState, server_id: str) -> None:
    """Show the private channels and whether the bypass is on.

    \b
    Examples:
      stm server privacy show 1234567890
    """
    show_privacy(state, with_admin(state, lambda admin: admin.privacy(server_id)))


_privacy_command("set", """Replace the private channel list (no ids clears it).

    \b
    Examples:
      stm server privacy set 1234567890 111 222
      stm server privacy set 1234567890
    """)
_privacy_command("add", """Add private channels.

    \b
    Examples:
      stm server privacy add 1234567890 333
    """)
_privacy_command("remove", """Remove private channels.

    \b
    Examples:
      stm server privacy remove 1234567890 111
    """)


@privacy.command("bypass")
@click.argument("server_id")
@click.argument("state_word", metavar="on|off", type=click.Choice(["on", "off"]))
@json_option
@pass_state
def privacy_bypass(state: CliState, server_id: str, state_word: str) -> None:
    """Turn the privacy bypass on (private memories show everywhere) or off.

    \b
    Examples:
      stm server privacy bypass 1234567890 on
      stm server privacy bypass 1234567890 off
    """
    result = with_admin(state, lambda admin: admin.set_privacy_bypass(
        server_id, bypass=state_word == "on"))
    if result.privacy_bypass and not state.json_output:
        note("warning: private channels' memories now show in every channel")
    show_privacy(state, result)


# -- capability ----------------------------------------------------------------------------
@server.group()
def capability() -> None:
    """The short-term-memory switch: the bot's own updates (tool + nudge)."""


def show_capability(state: CliState, result: Capability) -> None:
    def human(out: Screen) -> None:
        source = " (default)" if result.is_default else ""
        plain(out, f"Server {result.server_id}: automatic short-term memory "
                   f"{on_off(result.stm_enabled)}{source}")
        if not result.stm_enabled:
            plain(out, "The tool and the nudge are off; memories still show and can be "
                       "edited with 'stm memory edit'.")

    emit(state, result.to_dict(), human)


@capability.command("show")
@click.argument("server_id")
@json_option
@reads_only
@pass_state
def capability_show(state: CliState, server_id: str) -> None:
    """Show whether the bot manages its short-term memory on this server.

    \b
    Examples:
      stm server capability show 1234567890
    """
    show_capability(state, with_admin(state, lambda admin: admin.capability(server_id)))


def _capability_command(enabled: bool, doc: str) -> None:
    @click.argument("server_id")
    @json_option
    @pass_state
    def command(state: CliState, server_id: str) -> None:
        show_capability(state, with_admin(
            state, lambda admin: admin.set_stm_enabled(server_id, enabled=enabled)))

    command.__doc__ = doc
    capability.command("on" if enabled else "off")(command)


_capability_command(True, """Let the bot update its short-term memory (tool and nudge).

    \b
    Examples:
      stm server capability on 1234567890
    """)
_capability_command(False, """Stop the bot's own updates; memories still show and stay editable.

    \b
    Examples:
      stm server capability off 1234567890
    """)
