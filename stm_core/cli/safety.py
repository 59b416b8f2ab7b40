"""Guards of the ``stm`` command: confirm before destroying, preview with
``--dry-run``, and refuse to read a database that does not exist."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def yes_option(func: F) -> F:
    return click.option("--yes", "-y", "yes", is_flag=True,
                        help="Do it without asking (needed when there is no terminal to "
                             "ask on, e.g. in scripts).")(func)


def dry_run_option(func: F) -> F:
    return click.option("--dry-run", is_flag=True,
                        help="Show what would change and change nothing.")(func)


def confirm(what: str, *, yes: bool) -> None:
    """Ask before a destructive step. ``what`` says what will happen, e.g.
    "delete every memory of channel 555". On a terminal the operator answers;
    without one (a script, a pipe) ``--yes`` is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError(f"this would {what}; pass --yes to confirm (there is no "
                               "terminal to ask on)")
    click.confirm(f"This will {what}. Continue?", abort=True, err=True)
