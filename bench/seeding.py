"""Filling stm's own schema fast with ``sqlite3.executemany``.

The schema is created by opening the store once; rows are then inserted
directly (millions in seconds), spread over many servers. Column names are
checked against the live table first, so a schema change fails loudly here
rather than seeding something stm would never read.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from bench import workload as w

TABLE = "stm_memories"
COLUMNS = ("scope_kind", "server_id", "user_id", "channel_id", "persona_id",
           "persona_lineage_id", "summary", "categories", "messages", "turns_since_refresh",
           "last_refreshed_turn", "updated_at_ms", "rev", "created_at_ms")
#: Channels per seeded server (a busy guild's active channels).
CHANNELS_PER_SERVER = 20
#: Ordered rows get older by 1 ms per row below this many rows.
ORDERED_SPAN_MS = 2_000_000
#: Seeded servers are numbered from here, away from the live scenarios' ids.
SERVER_BASE = 1_000_000


def check_schema(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")}
    missing = [c for c in COLUMNS if c not in present]
    if missing:
        raise RuntimeError(f"stm's table {TABLE} has no column(s) {', '.join(missing)}; "
                           "update bench/seeding.py")


def seeded_server(n: int) -> str:
    return w.server_id(SERVER_BASE + n)


def _messages(now_ms: int) -> str:
    return json.dumps([{"role": "user", "content": "see you at the tower", "speaker_name":
                        w.USER_NAME, "timestamp_ms": now_ms},
                       {"role": "model", "content": "I will bring the key", "speaker_name":
                        w.BOT, "timestamp_ms": now_ms}], separators=(",", ":"))


def _rows(first: int, last: int, updated_at_ms: int, server_base: int,
          scattered: bool, per_server: int) -> Iterator[tuple[object, ...]]:
    messages = _messages(updated_at_ms)
    summary = "The party rested at the inn and planned the climb."
    for n in range(first, last):
        server, channel = divmod(n, per_server)
        # Scattered: the oldest rows are spread over the whole table (every
        # 1000th row), so a purge batch touches pages everywhere. Ordered: the
        # oldest rows are the first inserted, so a batch touches neighbours.
        age = (999 - n % 1000) if scattered else max(0, ORDERED_SPAN_MS - n)
        yield ("server", w.server_id(server_base + server), "", w.channel_id(channel),
               w.PERSONA_ID, w.LINEAGE_ID, summary, "{}", messages, 1, 0,
               updated_at_ms - age, 1, updated_at_ms)


def seed_rows(path: Path, first: int, last: int, *, updated_at_ms: int,
              server_base: int = SERVER_BASE, scattered: bool = True,
              batch: int = 50_000, per_server: int = CHANNELS_PER_SERVER) -> None:
    """Insert rows ``first..last-1`` (server ``n // per_server``, channel
    ``n % per_server``), updated up to a few minutes before ``updated_at_ms``."""
    sql = (f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in COLUMNS)})")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: index inserts stay in memory
        for start in range(first, last, batch):
            conn.executemany(sql, _rows(start, min(last, start + batch), updated_at_ms,
                                        server_base, scattered, per_server))
            conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def count_rows(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
