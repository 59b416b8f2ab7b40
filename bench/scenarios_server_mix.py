"""``server_mix_*``: a warm build in a 50k-row server of each hard mix ÷ 500.

``server_scale_ratio`` fills its big server with one lineage's rows at spread
times, all public and fresh: the newest rows a view keeps are the ones a
build shows. A big community is rarely that tidy. Each mix here fills one
server with as many rows as the big server of ``server_scale``, in a shape
where the newest rows are not the ones a build may show:

* ``ties``: every row has the same ``updated_at_ms`` (a bulk import);
* ``other_lineage``: another persona lineage wrote the newest tenth;
* ``private``: the newest tenth is in private channels;
* ``threads``: 90 % of rows are threads under five parent channels;
* ``expired``: 90 % of rows are crude rows past their 12 h TTL but inside the
  24 h load window, newer than the summaries that still show;
* ``many_scopes``: rows of 64 persona lineages, and builds rotating over the
  lineages and over users who each have channels of their own hidden (a
  visibility policy declaring per-user hidden channels): 64 lineages times
  16 hidden sets, where a view used to keep 16 scopes. Its builds run on a
  second store on the same file, the one with that policy, and its floor is
  the same rotating turns in a 500-channel server of 64 lineages
  (``many_scopes_base``, on that store too): the tidy server's turns repeat
  one lineage and one user, whose answers a build hands out again.

Against each, the same turns in a server of 500 public channels of one
lineage (``server_scale``'s small server). The target is stated in p99:
``server_mix_<mix>`` is the mix's p99 over the small server's, ≤ 2. Turns
happen in channels without a row (their absence is cached on the first
build), so every build shows ``max_other_channels`` rows of others and
nothing of its own. Also reported: the median ratio, the database reads
made by timed builds (must be 0), the rows each server's view holds with its
scopes, and the rows the builds showed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from bench import workload as w
from bench.config import RunConfig
from bench.harness import interleave, ratio
from bench.seeding import TABLE, check_schema
from bench.stm_side import open_bench_store
from bench.urls import sqlite_url
from hookspecs import hookimpl
from hookspecs.types import VisibilityContext, VisibilityPolicy, hides_channels
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.storage.records import MemoryRecord
from stm_core.store import Stm

MIXES = ("ties", "other_lineage", "private", "threads", "expired", "many_scopes")
#: ``many_scopes``: persona lineages, and users each with channels of their own hidden.
LINEAGES = 64
USERS = 16
HIDDEN_PER_USER = 4
#: Seeded servers are numbered from here (away from other scenarios' ids).
BASE = 4_000_000
#: Channels turns talk in: no row of their own.
ACTIVE = 20
HOUR_MS = 3_600_000
COLUMNS = ("scope_kind", "server_id", "user_id", "channel_id", "persona_id",
           "persona_lineage_id", "parent_channel_id", "summary", "categories", "messages",
           "turns_since_refresh", "last_refreshed_turn", "updated_at_ms", "rev",
           "created_at_ms")
SUMMARY = "The party rested at the inn and planned the climb."
#: Reads a warm build must not make.
READS = ("load_server_settings", "load_server_memories", "newest_server_memories",
         "load_user_prefs", "load_user_memories", "get_memory", "list_memories")


def _channel(n: int) -> str:
    return w.channel_id(1_000 + n)


def _rows(server: str, mix: str | None, count: int, now: int
          ) -> Iterator[tuple[object, ...]]:
    """One server's rows: ``mix`` ``None`` is the tidy small server."""
    messages = json.dumps([{"role": "user", "content": "see you at the tower",
                            "speaker_name": w.USER_NAME, "timestamp_ms": now}],
                          separators=(",", ":"))
    newest_tenth = count - count // 10
    for n in range(count):
        at = now - HOUR_MS + n  # spread, newest last
        lineage, parent = w.LINEAGE_ID, None
        summary: str | None = SUMMARY
        if mix == "ties":
            at = now - HOUR_MS
        elif mix == "other_lineage" and n >= newest_tenth:
            lineage = "other"
        elif mix == "many_scopes":
            lineage = f"L{n % LINEAGES}"
        elif mix == "threads" and n % 10:
            parent = w.channel_id(n % 5)
        elif mix == "expired":
            if n < count // 10:  # the older tenth: summaries, shown for 24 h
                at = now - 20 * HOUR_MS + n
            else:  # the rest: crude rows, newer, expired at 12 h
                at, summary = now - 13 * HOUR_MS + n, None
        yield ("server", server, "", _channel(n), w.PERSONA_ID, lineage, parent, summary,
               "{}", messages, 1, 0, at, 1, at)


def _seed(path: Path, servers: dict[str, str | None], counts: dict[str, int], now: int) -> None:
    sql = (f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in COLUMNS)})")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")}
        missing = [c for c in COLUMNS if c not in present]
        if missing:
            raise RuntimeError(f"stm's table {TABLE} has no column(s) {', '.join(missing)}; "
                               "update bench/scenarios_server_mix.py")
        conn.execute("PRAGMA synchronous=OFF")
        for server, mix in servers.items():
            conn.executemany(sql, _rows(server, mix, counts[server], now))
        conn.commit()


def _turns(server: str, count: int, mix: str | None = None) -> list[Turn]:
    names = {w.channel_id(c): f"chan-{c}" for c in range(ACTIVE)}
    turns = [w.build_turn(server, w.channel_id(i % ACTIVE), names) for i in range(count)]
    if mix != "many_scopes":
        return turns
    return [attrs.evolve(t, persona_lineage_id=f"L{i % LINEAGES}", user_id=f"user{i % USERS}")
            for i, t in enumerate(turns)]


@functools.lru_cache(maxsize=USERS)
def _hidden_of(user: str | None, large: int) -> frozenset[str]:
    """A user's own hidden channels, among the newest rows of the big server."""
    number = int((user or "user0")[4:])
    return frozenset(_channel(large - 1 - USERS * k - number) for k in range(HIDDEN_PER_USER))


class PerUserHidden:
    """A host's policy: each user has a few channels of the server hidden, declared."""

    def __init__(self, rows: dict[str, int]) -> None:
        self.rows = rows

    @hookimpl
    def stm_visibility_policies(self) -> list[VisibilityPolicy]:
        rows = self.rows

        def hidden(ctx: VisibilityContext) -> frozenset[str]:
            count = rows.get(ctx.turn.server_id or "")
            return frozenset() if count is None else _hidden_of(ctx.turn.user_id, count)

        @hides_channels(hidden)
        def per_user(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
            return False if entry.key.channel_id in hidden(ctx) else None
        return [per_user]


def _build(stm: Stm, turns: list[Turn]) -> Callable[[int], Awaitable[object]]:
    async def one(i: int) -> object:
        return await stm.build_context(turns[i])
    return one


def count_reads(stm: Stm) -> dict[str, int]:
    """Count the adapter's reads from here on (wrapping this instance's methods)."""
    counts = dict.fromkeys(READS, 0)
    adapter = stm.adapter
    for name in READS:
        def counted(method: Callable[..., Awaitable[Any]], name: str = name
                    ) -> Callable[..., Awaitable[Any]]:
            async def call(*args: Any, **kwargs: Any) -> Any:
                counts[name] += 1
                return await method(*args, **kwargs)
            return call
        setattr(adapter, name, counted(getattr(adapter, name)))
    return counts


async def run(cfg: RunConfig) -> dict[str, Any]:
    small, large = cfg.server_channels
    path = cfg.workdir / "server_mix.db"
    now = w.EPOCH_MS
    clock = ManualClock(now)
    async with open_bench_store(sqlite_url(path), clock):
        pass  # stm's schema; rows go in directly
    check_schema(path)
    servers: dict[str, str | None] = {w.server_id(BASE): None}
    servers.update({w.server_id(BASE + 1 + n): mix for n, mix in enumerate(MIXES)})
    counts = {server: small if mix is None else large for server, mix in servers.items()}
    many_base = w.server_id(BASE + 1 + len(MIXES))
    servers[many_base], counts[many_base] = "many_scopes", small
    _seed(path, servers, counts, now)
    names = {server: mix or "base" for server, mix in servers.items()}
    names[many_base] = "many_scopes_base"
    per_round = max(cfg.turns // 4, 5)
    count = max(cfg.warmup, 1) + cfg.rounds * per_round
    turns = {server: _turns(server, count, mix) for server, mix in servers.items()}
    many = w.server_id(BASE + 1 + MIXES.index("many_scopes"))
    details: dict[str, Any] = {}
    async with open_bench_store(sqlite_url(path), clock) as stm, \
            open_bench_store(sqlite_url(path), clock) as scoped_store:
        scoped_store.pm.register(PerUserHidden({many: large, many_base: small}),
                                 name="per-user-hidden")
        store = {server: scoped_store if mix == "many_scopes" else stm
                 for server, mix in servers.items()}
        private_server = w.server_id(BASE + 1 + MIXES.index("private"))
        hidden = frozenset(_channel(n) for n in range(large - large // 10, large))
        await stm.engine.write_settings(private_server, lambda: stm.adapter.update_server_settings(
            private_server, {"private_channel_ids": hidden}, now_ms=now))
        shown: dict[str, int] = {}
        for server in servers:
            warm = ACTIVE if servers[server] != "many_scopes" else 2 * LINEAGES * USERS
            for turn in turns[server][:warm]:  # loads, probes and reads each scope once
                context = await store[server].build_context(turn)
            shown[names[server]] = sum(item.kind == "other_channels"
                                       for item in context.memory_items)
        reads = count_reads(stm)
        scoped_reads = count_reads(scoped_store)
        stats = await interleave({f"server_mix_build_{names[s]}": _build(store[s], turns[s])
                                  for s in servers},
                                 rounds=cfg.rounds, turns=per_round, warmup=cfg.warmup)
        for server in servers:
            view = await store[server].engine.server_memories(server)
            details[names[server]] = {"rows": counts[server], "rows_in_view": len(view.records),
                                      "rows_held_with_scopes": view.rows_held()}
    out: dict[str, Any] = {}
    for mix in MIXES:
        base = stats["server_mix_build_many_scopes_base" if mix == "many_scopes"
                     else "server_mix_build_base"]
        big = stats[f"server_mix_build_{mix}"]
        out[f"server_mix_{mix}"] = round(big.p99_us / base.p99_us, 3)
        details[mix]["median_ratio"] = ratio(big, base)
    out["server_mix"] = {"channels": [small, large], "views": details,
                         "max_rows_per_view": stm.settings.cache_max_rows_per_view,
                         "db_reads_in_timed_builds": sum(reads.values())
                         + sum(scoped_reads.values()),
                         "other_channel_blocks_shown": shown}
    out["scenarios"] = {name: s.to_json() for name, s in stats.items()}
    return out
