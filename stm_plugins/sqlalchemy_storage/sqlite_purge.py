"""A janitor batch on SQLite's one writer, in slices a turn write can come between.

SQLite has one writer: a turn write queued behind a purge batch waits for the
whole ``DELETE``. How long that takes depends on how scattered the old rows
are and on the page cache, not only on the batch size the janitor chose from
the batches before, so its tail (several times the median) is what a chat
feels. Here the batch runs as statements of at most ``SLICE_ROWS`` rows, and
once it has held the writer for ``YIELD_AFTER_S`` it stops at the end of a
slice when a write waits in the writer's queue: that write then waits for one
slice and the commit, and the janitor's next batch takes the rest.

The slices delete exactly what the one statement would have deleted: the
lowest ids among the ``window`` oldest rows older than ``bound``. A slice's
window is that window less the rows the slices before it deleted (they were
all in it), so it holds the same remaining rows.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

import attrs

from stm_plugins.sqlalchemy_storage.compiled import Compiled

#: Rows one ``DELETE`` of a batch removes at most (about half a millisecond of
#: scattered rows, a fraction of the janitor's usual 3 ms budget).
SLICE_ROWS = 64
#: A batch gives way to a waiting write only after holding the writer this
#: long: a batch that yielded at once to a bot writing every few milliseconds
#: would delete a slice per pause and take many times longer.
YIELD_AFTER_S = 0.001


@attrs.define
class SlicedPurge:
    """One purge batch's outcome."""

    rows: list[Any]
    #: Seconds the batch held the connection.
    held_s: float
    #: True when it stopped for a waiting write with rows of the batch left.
    yielded: bool


def purge_in_slices(conn: sqlite3.Connection, compiled: Compiled, params: dict[str, Any],
                    writes_waiting: Callable[[], int]) -> SlicedPurge:
    """Run the purge statement ``compiled`` with ``params`` (``batch`` and
    ``window`` among them) as slices, inside the caller's transaction."""
    started = time.perf_counter()
    batch, window = params["batch"], params["window"]
    rows: list[Any] = []
    while True:
        size = min(SLICE_ROWS, batch - len(rows))
        got = conn.execute(compiled.sql, compiled.named(
            {**params, "batch": size, "window": window - len(rows)})).fetchall()
        rows += got
        held = time.perf_counter() - started
        if len(got) < size or len(rows) == batch:
            return SlicedPurge(rows, held, yielded=False)
        if held >= YIELD_AFTER_S and writes_waiting():
            return SlicedPurge(rows, held, yielded=True)
