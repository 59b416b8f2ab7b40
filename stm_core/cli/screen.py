"""Text for people: lines, headings and boxed tables, on a terminal or in a pipe.

Drawn here rather than with rich, whose import would slow a quick command's
start-up (rich still draws the demo and the janitor's progress bar). Text
that came from users or the database is printed as written, with two
exceptions that keep a terminal safe: control characters (an escape
sequence, a carriage return) are shown as ``\\x1b``, and tabs become spaces
inside tables. Colours and bold only go to a terminal, never
with ``NO_COLOR`` or ``TERM=dumb``; ``FORCE_COLOR`` asks for them anywhere.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TextIO

#: Width for output that is not a terminal and has no ``COLUMNS``.
PIPE_WIDTH = 80
_SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33"}


class Span(NamedTuple):
    """Text printed in one style (``"bold red"``: names joined by spaces)."""
    text: str
    style: str = ""


#: A table cell: plain text, or styled pieces, each starting on a new line.
Cell = str | Span | Sequence[Span]
#: Wraps text in a style's terminal codes (or not).
Paint = Callable[[str, str], str]


class Table:
    """A boxed table: heavy lines under the header, light ones elsewhere."""

    def __init__(self, title: str | None, columns: Sequence[str], *,
                 show_header: bool = True, show_lines: bool = False,
                 no_wrap: Iterable[int] = ()) -> None:
        self.title = title
        self.columns = list(columns)
        self.show_header = show_header
        self.show_lines = show_lines
        self.no_wrap = frozenset(no_wrap)
        self.rows: list[list[list[Span]]] = []

    def add_row(self, *cells: Cell | None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([_spans(cell) for cell in cells])


class Screen:
    """Where human output goes: ``print`` a line, a :class:`Table` or nothing."""

    def __init__(self, stream: TextIO | None = None, *, width: int | None = None,
                 color: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        tty = _isatty(self.stream)
        self.width = width or _width(tty)
        self.color = _wants_color(tty) if color is None else color

    def print(self, item: Table | str | None = None, *, style: str = "") -> None:
        if isinstance(item, Table):
            self.stream.write("\n".join(_draw(item, self.width, self._paint)) + "\n")
        else:
            self.stream.write(self._paint(visible(item or ""), style) + "\n")

    def _paint(self, text: str, style: str) -> str:
        codes = [_SGR[name] for name in style.split() if name in _SGR]
        if not (self.color and codes and text):
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def visible(text: str) -> str:
    """``text`` with control characters other than newline and tab shown as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" or unicodedata.category(c) != "Cc"
                   else f"\\x{ord(c):02x}" for c in text)


def cell_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide East Asian characters take two."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def _width(tty: bool) -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not tty:
        return PIPE_WIDTH
    import shutil  # with bz2 and lzma: only a terminal asks for its size

    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns


def _wants_color(tty: bool) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return tty and os.environ.get("TERM") != "dumb"


def _spans(cell: Cell | None) -> list[Span]:
    if cell is None:
        return [Span("")]
    if isinstance(cell, Span):
        return [cell]
    if isinstance(cell, str):
        return [Span(cell)]
    return list(cell) or [Span("")]


# -- drawing ----------------------------------------------------------------------------
def _lines_of(spans: list[Span]) -> list[Span]:
    """One span per line, tabs expanded and control characters made visible."""
    return [Span(visible(line).expandtabs(4), span.style)
            for span in spans for line in span.text.split("\n")]


def _fit(natural: list[int], floor: list[int], room: int) -> list[int]:
    """Narrow the widest columns, one character at a time, until they fit ``room``."""
    widths = list(natural)
    excess = sum(widths) - room
    while excess > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            break  # wider than the screen: the terminal wraps it
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def _wrap(line: str, width: int) -> list[str]:
    """Words onto lines of at most ``width`` columns. A longer word is folded
    after its identifier separators (``register_storage_`` / ``adapters``), and
    cut only where a part between them is itself wider than the column."""
    if cell_width(line) <= width:
        return [line]
    out: list[str] = []
    current = ""
    for word in line.split(" "):
        candidate = f"{current} {word}" if current else word
        if cell_width(candidate) <= width:
            current = candidate
            continue
        if current:
            out.append(current)
        current = ""
        for part in _IDENTIFIER_PART.findall(word):
            if current and cell_width(current + part) > width:
                out.append(current)
                current = ""
            for char in part:  # cut a part wider than the column
                if cell_width(current + char) > width and current:
                    out.append(current)
                    current = ""
                current += char
    out.append(current)
    return out


#: A word's parts, each ending with the separator after it (``_ . - / + : ,``).
_IDENTIFIER_PART = re.compile(r"[^_./+:,-]*(?:[_./+:,-]+|$)")


def _draw(table: Table, screen_width: int, paint: Paint) -> list[str]:
    """The table's lines, cells painted in their styles."""
    n = len(table.columns)
    header = [[Span(name, "bold")] for name in table.columns]
    body = [[_lines_of(cell) for cell in row] for row in table.rows]
    everything = ([header] if table.show_header else []) + body
    natural = [max([1] + [cell_width(s.text) for row in everything for s in row[i]])
               for i in range(n)]
    room = screen_width - 3 * n - 1
    # Narrow columns down to their longest word first; cut words only if that is not enough.
    words = [natural[i] if i in table.no_wrap else
             max([1] + [cell_width(w) for row in everything for s in row[i]
                        for w in s.text.split(" ")]) for i in range(n)]
    widths = _fit(_fit(natural, words, room), [w if i in table.no_wrap else 1
                                               for i, w in enumerate(natural)], room)

    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def row_lines(cells: list[list[Span]], bar: str) -> list[str]:
        wrapped = [[Span(part, s.style) for s in cell for part in _wrap(s.text, widths[i])]
                   for i, cell in enumerate(cells)]
        lines = []
        for k in range(max(len(cell) for cell in wrapped)):
            parts = []
            for i, cell in enumerate(wrapped):
                text, style = cell[k] if k < len(cell) else ("", "")
                pad = " " * (widths[i] - cell_width(text))
                parts.append(f" {paint(text, style)}{pad} ")
            lines.append(bar + bar.join(parts) + bar)
        return lines

    out = [paint(visible(table.title), "italic")] if table.title else []
    if table.show_header:
        out += [rule("┏", "━", "┳", "┓"), *row_lines(header, "┃"), rule("┡", "━", "╇", "┩")]
    else:
        out.append(rule("┌", "─", "┬", "┐"))
    for index, cells in enumerate(body):
        if index and table.show_lines:
            out.append(rule("├", "─", "┼", "┤"))
        out += row_lines(cells, "│")
    out.append(rule("└", "─", "┴", "┘"))
    return out
