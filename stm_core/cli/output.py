"""Printing for people (rich tables) and for scripts (``--json``).

Results go to stdout, notes and diagnostics to stderr. Rich is imported only
when something is printed for people, so ``stm`` starts quickly. Every text
that came from a user or the database is wrapped in ``Text``, so brackets such
as ``[System: ...]`` are printed as written, never read as rich markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from stm_core.cli.state import CliState

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def emit(state: CliState, data: Any, human: Callable[[Console], None]) -> None:
    """``data`` as JSON with ``--json``; otherwise let ``human`` print it."""
    if state.json_output:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))
    else:
        human(console())


def note(message: str) -> None:
    """A one-line diagnostic on stderr (never mixed into results)."""
    click.echo(message, err=True)


def table(title: str | None, columns: Sequence[str],
          rows: Iterable[Sequence[object]], *, show_header: bool = True) -> Table:
    from rich.table import Table
    from rich.text import Text

    result = Table(title=title, title_justify="left", show_header=show_header)
    for column in columns:
        result.add_column(column, overflow="fold")
    for row in rows:
        result.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    return result


def heading(out: Console, title: str) -> None:
    from rich.text import Text

    out.print(Text(title, style="bold"))


def plain(out: Console, text: str, *, style: str | None = None) -> None:
    from rich.text import Text

    # Soft wrap: long texts (prompts, memories) are never cut into fixed lines.
    out.print(Text(text, style=style or ""), soft_wrap=True)


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
