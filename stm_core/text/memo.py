"""A memo of what was worked out from texts, bounded by entries and by characters.

The record path remembers what it made of each line text (the cleaned line,
its JSON) because a channel stores mostly the lines of its previous turns
again. A count of entries alone does not bound memory: the texts are the
host's, and a pasted log can be a megabyte. This memo also counts the
characters it holds and says it is full past either limit; its owner then
starts a new one (or clears it).
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: Entries a memo holds before it is full.
MAX_ENTRIES = 4096
#: Characters (keys' and values' texts) a memo holds before it is full:
#: a few megabytes at most, whatever the host's texts are.
MAX_CHARS = 1_000_000


class TextMemo(dict[K, V]):
    """A dict that counts the characters remembered through :meth:`remember`.

    Reads are plain dict reads. An entry remembered again under its key
    replaces the old one in the count too (a row's memo is written on every
    turn of its channel). Stores from several threads may race on the
    count: it is a bound, not an exact figure.
    """

    __slots__ = ("_sizes", "chars", "max_chars", "max_entries")

    def __init__(self, max_entries: int = MAX_ENTRIES, max_chars: int = MAX_CHARS) -> None:
        super().__init__()
        self.chars = 0
        self.max_entries = max_entries
        self.max_chars = max_chars
        #: What each entry counted (stores only; reads never look here).
        self._sizes: dict[K, int] = {}

    def full(self) -> bool:
        return len(self) >= self.max_entries or self.chars >= self.max_chars

    def remember(self, key: K, value: V, chars: int) -> None:
        """Keep ``value`` under ``key`` (``chars``: the characters both hold),
        in place of what the key held, unless the memo is full or the entry
        alone is over the limit (so a memo never holds twice ``max_chars``):
        what is not kept is worked out again when it comes back."""
        old = self._sizes.pop(key, None)
        if old is not None:
            self.pop(key, None)
            self.chars -= old
        if chars <= self.max_chars and not self.full():
            self[key] = value
            self._sizes[key] = chars
            self.chars += chars

    def clear(self) -> None:
        super().clear()
        self._sizes.clear()
        self.chars = 0
