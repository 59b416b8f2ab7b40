"""The last value made, handed out again for equal inputs.

A build often makes a text from the very inputs of the build before (a quiet
channel asked again). Handing out the same string object lets the mention
converters find it in their memos by identity; a new string of the same text
costs them a hash and a comparison of its whole length. One slot per use:
a table of older values would rarely be asked again and would hold memory.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LastMade(Generic[K, V]):
    """``make(key)``, or the value made last time when ``key`` is equal to
    that time's. The pair is replaced as one object, so stores in other
    threads never see half of one."""

    __slots__ = ("_last", "_make")

    def __init__(self, make: Callable[[K], V]) -> None:
        self._make = make
        self._last: tuple[K, V] | None = None

    def __call__(self, key: K) -> V:
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        value = self._make(key)
        self._last = (key, value)
        return value
