"""The ``stm plugins`` command (placeholder until introspection lands)."""

from __future__ import annotations

import click


@click.command(name="plugins")
def plugins() -> None:
    """List installed plugins."""
    raise click.ClickException("not implemented yet")
