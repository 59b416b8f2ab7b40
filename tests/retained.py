"""How much memory a piece of work leaves behind (for the memo bound tests)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def retained_bytes(work: Callable[[], object]) -> int:
    """Bytes still allocated after ``work`` returned, by what it allocated."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
