"""Cutting text to a limit, visibly: the marks a reader (and the model) sees."""

from __future__ import annotations

#: Ends a stored raw line that was longer than ``max_stored_line_length``.
LINE_TRUNCATION_MARK = " […line cut]"
#: Ends a summary or category text cut to fit the prompt budget.
BUDGET_TRUNCATION_MARK = " […cut to fit]"


def cut(text: str, limit: int, mark: str) -> str:
    """``text`` when it has at most ``limit`` characters, else its start and
    ``mark``, ``limit`` characters in all (the mark alone when it is longer)."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(mark), 0)
    return text[:keep].rstrip() + mark
