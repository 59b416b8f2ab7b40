"""``stm plugins new NAME``: start a plugin distribution from a template."""

from __future__ import annotations

from pathlib import Path

import click

from stm_core.cli.scaffold import PluginNames, parse_concerns, render_files, write_plugin
from stm_core.cli.scaffold_templates import CONCERNS, DEFAULT_CONCERNS


@click.command(name="new")
@click.argument("name")
@click.option("--concern", "concerns", multiple=True, type=click.Choice(list(CONCERNS)),
              help="A hook concern to include an example of (repeatable). "
                   f"Default: {', '.join(DEFAULT_CONCERNS)}.")
@click.option("--dir", "directory", type=click.Path(path_type=Path),
              help="Where to write it (default: ./stm-NAME). Must not exist, or be empty.")
def new(name: str, concerns: tuple[str, ...], directory: Path | None) -> None:
    """Write a complete plugin distribution called stm-NAME.

    It has a pyproject.toml with the "stm" entry point and a dependency on
    stm-core, a module with one commented example per hook concern, tests on
    the stm test kit and a README. Install it with pip install -e '.[test]',
    then run pytest and stm plugins.

    \b
    Examples:
      stm plugins new shouty
      stm plugins new acme --concern gate --concern tool-format --dir plugins/acme
    """
    names = PluginNames.parse(name)
    picked = parse_concerns(concerns)
    target = write_plugin(directory or Path.cwd() / names.distribution,
                          render_files(names, picked))
    click.echo(f"wrote {names.distribution} to {target} "
               f"(entry point {names.slug!r}, package {names.package})")
    click.echo(f"next: cd {target} && pip install -e '.[test]' && pytest && stm plugins")
