"""The ``stm demo`` command (placeholder until the demo lands)."""

from __future__ import annotations

import click


@click.command(name="demo")
def demo() -> None:
    """Replay a bundled transcript through stm."""
    raise click.ClickException("not implemented yet")
