"""Printing for people (:mod:`stm_core.cli.screen`) and for scripts (``--json``).

Results go to stdout, notes and diagnostics to stderr. Text that came from a
user or the database is printed as written (brackets such as
``[System: ...]`` included); only control characters are shown as escapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from stm_core.cli.screen import Screen, Table
from stm_core.cli.state import CliState


def emit(state: CliState, data: Any, human: Callable[[Screen], None]) -> None:
    """``data`` as JSON with ``--json``; otherwise let ``human`` print it."""
    if state.json_output:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))
    else:
        human(Screen())


def note(message: str) -> None:
    """A one-line diagnostic on stderr (never mixed into results)."""
    click.echo(message, err=True)


def table(title: str | None, columns: Sequence[str],
          rows: Iterable[Sequence[object]], *, show_header: bool = True) -> Table:
    result = Table(title, columns, show_header=show_header)
    for row in rows:
        result.add_row(*("" if cell is None else str(cell) for cell in row))
    return result


def heading(out: Screen, title: str) -> None:
    out.print(title, style="bold")


def plain(out: Screen, text: str, *, style: str | None = None) -> None:
    # Never cut into fixed lines: long texts (prompts, memories) wrap in the terminal.
    out.print(text, style=style or "")


def on_off(value: bool) -> str:
    return "on" if value else "off"


def timestamp(ms: int) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


F = TypeVar("F", bound=Callable[..., Any])


def output_option(func: F) -> F:
    """``-o/--output FILE`` for a command that writes a JSON document."""
    return click.option("-o", "--output",
                        type=click.Path(dir_okay=False, writable=True, path_type=Path),
                        help="Write to this file instead of stdout.")(func)


def write_json(data: Any, output: Path | None) -> None:
    """Indented JSON to ``output``, or to stdout when it is ``None``."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        from stm_core.cli.files import write_text_file

        write_text_file(output, text)  # a missing folder exits 2 with one line
        click.echo(f"wrote {output}", err=True)
