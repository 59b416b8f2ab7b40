"""Storage growth of summary history: bytes per memory row on a SQLite file.

``ROWS`` rows each get ``WRITES`` summary rewrites of ``max_summary_length``
characters (the worst case), once with history off and once with the default
history (10 earlier revisions kept). Bytes are the database's pages in use
after a ``VACUUM``; growth stays bounded because every write trims its row's
history in the same transaction. Twice the writes must not cost more bytes.

Runs with the others (``python -m bench --only history``) or alone::

    python -m bench.scenarios_history
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import attrs

from bench import standalone
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.store import open_store

ROWS = 200
WRITES = 15


async def _fill(path: Path, history: int, writes: int) -> int:
    """Bytes of a database after ``writes`` full-length rewrites of each row."""
    settings = attrs.evolve(Settings(), memory_history_revisions=history)
    clock = ManualClock(1_767_000_000_000)
    async with open_store(f"sqlite+aiosqlite:///{path}", settings=settings, clock=clock,
                          load_entrypoints=False) as stm:
        length = settings.max_summary_length
        for w in range(writes):
            for r in range(ROWS):
                turn = Turn(user_id="u", channel_id=f"c{r}", server_id="g", persona_id="p")
                text = (f"rewrite {w} of row {r}. " * length)[:length]
                result = await stm.apply_tool_call(turn, {"summary": text})
                assert result.ok, result.message
            clock.advance(minutes=1)
    with sqlite3.connect(path) as conn:
        conn.execute("VACUUM")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int(pages * size)


async def measure() -> dict[str, Any]:
    # Each tool write updates the server row and the user's own copy: 2 rows per channel.
    rows = 2 * ROWS
    with tempfile.TemporaryDirectory(prefix="stm-bench-history-") as tmp:
        folder = Path(tmp)
        without = await _fill(folder / "off.db", 0, WRITES)
        kept = Settings().memory_history_revisions
        with_history = await _fill(folder / "on.db", kept, WRITES)
        twice = await _fill(folder / "twice.db", kept, 2 * WRITES)
    return {
        "history_bytes_per_row": round(with_history / rows),
        "history": {"rows": rows, "writes_per_row": WRITES, "revisions_kept": kept + 1,
                    "summary_chars": Settings().max_summary_length,
                    "bytes_per_row_without_history": round(without / rows),
                    "bytes_per_row_with_history": round(with_history / rows),
                    "bytes_per_row_after_twice_the_writes": round(twice / rows),
                    "bounded": twice <= with_history * 1.05},
    }


async def run(_cfg: object) -> dict[str, Any]:
    """The ``python -m bench`` entry point."""
    return await measure()


def markdown(results: dict[str, Any]) -> str:
    h = results["history"]
    return "\n".join([
        "## Summary history storage", "",
        f"{h['rows']} memory rows on a SQLite file, {h['writes_per_row']} rewrites of "
        f"{h['summary_chars']} characters each; `python -m bench.scenarios_history` re-runs "
        "it.", "",
        "| | bytes per row |", "|---|---|",
        f"| history off | {h['bytes_per_row_without_history']:,} |",
        f"| {h['revisions_kept']} revisions kept (default) | "
        f"{h['bytes_per_row_with_history']:,} |",
        f"| same, after twice the rewrites | {h['bytes_per_row_after_twice_the_writes']:,} |",
    ])


def main(argv: list[str] | None = None) -> int:
    return standalone.main("python -m bench.scenarios_history", "history-storage", measure,
                           markdown, argv)


if __name__ == "__main__":
    raise SystemExit(main())
