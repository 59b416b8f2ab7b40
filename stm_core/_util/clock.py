"""Injectable time, so every TTL, age and freshness rule is testable without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Current time as integer epoch milliseconds."""
        ...


class SystemClock:
    """Wall-clock time."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (tests, the demo)."""

    def __init__(self, start_ms: int = 1_767_225_600_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, *, ms: int = 0, seconds: float = 0, minutes: float = 0,
                hours: float = 0, days: float = 0) -> int:
        self._now += ms + int(1000 * (seconds + 60 * minutes + 3600 * hours + 86400 * days))
        return self._now

    def set(self, now_ms: int) -> None:
        self._now = now_ms
