"""Replies within Discord's limits."""

from __future__ import annotations

#: Characters of one Discord message.
MESSAGE_LIMIT = 2000


def split_reply(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at a line break,
    else at a space, else anywhere; nothing is dropped but the whitespace at a
    cut. An empty text is no part."""
    parts = []
    rest = text.strip()
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit + 1)
        if cut <= 0:
            cut = rest.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        parts.append(rest)
    return parts
