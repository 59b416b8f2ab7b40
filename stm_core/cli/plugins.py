"""The ``stm plugins`` command: what is installed, what loaded, what failed."""

from __future__ import annotations

import json

import click

from stm_core.cli.plugins_new import new
from stm_core.cli.screen import Screen, Span, Table
from stm_core.errors import PluginError
from stm_core.plugins.introspect import PluginInfo, describe_plugins, find_conflicts
from stm_core.plugins.registration import create_plugin_manager

_STATUS_STYLE = {"loaded": "green", "failed": "bold red", "blocked": "yellow"}


@click.group(name="plugins", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def plugins(ctx: click.Context, as_json: bool) -> None:
    """List plugins: built-in, installed (entry points) and their status.
    "stm plugins new NAME" starts a new plugin distribution.

    A plugin that fails to load is listed as failed, with its error; the
    command still succeeds. Two plugins claiming one render mode, storage
    scheme or tool format are listed as conflicts. With STM_STRICT_PLUGINS=1 a
    plugin that fails to load is an error instead.

    \b
    Examples:
      stm plugins
      stm plugins --json
      STM_DISABLED_PLUGINS=stm-broken stm plugins
      STM_LOAD_PLUGINS= stm plugins        # built-ins only
      STM_TRACE_PLUGINS=1 stm plugins      # log every hook call
      stm plugins new shouty               # write a new plugin distribution
    """
    if ctx.invoked_subcommand is not None:
        return
    json_output = as_json or bool(getattr(ctx.obj, "json_output", False))
    try:
        pm = create_plugin_manager(load_entrypoints=True)
    except PluginError as exc:  # strict mode, or a broken built-in
        raise click.ClickException(str(exc)) from exc
    infos = describe_plugins(pm)
    conflicts = find_conflicts(pm)
    if json_output:
        click.echo(json.dumps({"plugins": [i.to_dict() for i in infos],
                               "conflicts": [c.to_dict() for c in conflicts]}, indent=2))
        return
    screen = Screen()
    screen.print(plugins_table(infos))
    for conflict in conflicts:
        screen.print(f"conflict: {conflict.message}", style="bold red")


plugins.add_command(new)


def plugins_table(infos: list[PluginInfo]) -> Table:
    # The source goes under the plugin's name, not in a column of its own: at
    # 80 columns that leaves the hooks column room for the longest hook name,
    # so no identifier is split across lines.
    table = Table("stm plugins", ["plugin (source)", "status", "hooks (stm_*) and keys"],
                  show_lines=True, no_wrap=[0])
    for info in infos:
        source = {"builtin": "built-in", "host": "host code"}.get(
            info.kind, " ".join(p for p in (info.distribution, info.version) if p))
        lines = [Span(", ".join(h.removeprefix("stm_") for h in info.hooks))] if info.hooks else []
        lines += [Span(line, "dim") for line in grouped_keys(info.provides)]
        lines += [Span(f"warning: {w}", "yellow") for w in info.warnings]
        if info.error:
            lines.append(Span(info.error, "red"))
        table.add_row([Span(info.name), Span(source, "dim")],
                      Span(info.status, _STATUS_STYLE[info.status]), lines)
    return table


def grouped_keys(provides: tuple[str, ...]) -> list[str]:
    """``("render mode a", "render mode b")`` -> ``["render mode: a, b"]``."""
    groups: dict[str, list[str]] = {}
    for item in provides:
        what, _, key = item.rpartition(" ")
        groups.setdefault(what, []).append(key)
    return [f"{what}: {', '.join(keys)}" for what, keys in groups.items()]
