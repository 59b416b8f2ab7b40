"""A bounded cache answers every build as an unbounded one does.

A server's view keeps its newest rows only; builds of a persona lineage then
walk the rows kept for that lineage (``ScopedRows``), and fall back to the
database when neither can answer. Over generated servers mixing what makes
that hard (rows sharing one time, several lineages and personas, private
channels and threads under them, rows expired but inside the load window, the
user's folded rows and DMs) and writes and deletes after the views and scopes
exist, a store whose views hold a handful of rows must build exactly what a
store whose views hold everything builds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.models import StmContext
from stm_core.settings import Settings
from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import Stm, open_store

from .support import (
    GUILD,
    capture,
    make_turn,
    server_key,
    set_opt_in,
    set_settings,
    user_key,
    write,
)

NOW = 1_767_225_600_000
HOUR = 3_600_000
CHANNELS = ("c0", "c1", "c2", "c3", "p0", "p1", "t0", "t1", "t2", "t3")
#: Threads hang under p0 or p1.
PARENTS = {"t0": "p0", "t1": "p0", "t2": "p1", "t3": "p1"}
#: Many rows share a time; some are fresh, some only their summary keeps
#: (past the 12 h TTL of crude rows), some are past both TTLs.
AGES = st.sampled_from([0, 0, 0, 1, HOUR, HOUR, 13 * HOUR, 13 * HOUR, 20 * HOUR, 25 * HOUR])

ROW = st.fixed_dictionaries({
    "scope": st.sampled_from(["server"] * 6 + ["dm", "copy"]),
    "channel": st.sampled_from(CHANNELS),
    "persona": st.sampled_from([None, "a", "b"]),
    "lineage": st.sampled_from([None, "L1", "L1", "L2"]),
    "summary": st.booleans(),
    "age": AGES,
})

#: After the first builds: a row written again (now, or stamped in the past
#: as a process whose clock is behind would), a row deleted, time moving on.
LATER = st.one_of(
    st.tuples(st.just("write"), ROW),
    st.tuples(st.just("delete"), st.sampled_from(CHANNELS)),
    st.tuples(st.just("advance"), st.sampled_from([1, HOUR, 11 * HOUR])),
)

TURN = st.fixed_dictionaries({
    "server_id": st.sampled_from([GUILD, GUILD, GUILD, None]),
    "channel_id": st.sampled_from((*CHANNELS, "new")),
    "persona_id": st.sampled_from([None, "a", "b"]),
    "persona_lineage_id": st.sampled_from([None, "", "L1", "L2"]),
    "has_tools": st.booleans(),
})


def key_of(row: dict[str, Any]) -> MemoryKey:
    if row["scope"] == "server":
        return server_key(row["channel"], row["persona"])
    return user_key(row["channel"], persona=row["persona"],
                    server=GUILD if row["scope"] == "copy" else None)


async def put(stm: Stm, row: dict[str, Any]) -> None:
    key, parent = key_of(row), PARENTS.get(row["channel"])
    if row["summary"]:
        await write(stm, key, summary=f"plan in {row['channel']}", lineage=row["lineage"],
                    parent=parent)
    else:
        await capture(stm, key, ("user", None, f"hi in {row['channel']}"),
                      lineage=row["lineage"], parent=parent)


async def builds(rows_per_view: int, cap: int, private: frozenset[str], bypass: bool,
                 opt_in: bool, rows: list[dict[str, Any]], later: list[tuple[str, Any]],
                 turns: list[dict[str, Any]]) -> list[StmContext]:
    clock = ManualClock(NOW)
    env = Settings(cache_max_rows_per_view=rows_per_view, max_other_channels=cap)
    out: list[StmContext] = []
    async with open_store("memory://", clock=clock, load_entrypoints=False,
                          settings=env) as stm:
        await set_settings(stm, private_channel_ids=private, privacy_bypass=bypass)
        for row in sorted(rows, key=lambda r: -r["age"]):  # oldest first
            clock.set(NOW - row["age"])
            await put(stm, row)
        if opt_in:
            clock.set(NOW - 5)
            await write(stm, user_key("far", server="elsewhere"), summary="far away")
            await set_opt_in(stm)
        clock.set(NOW)
        out += [await build(stm, t) for t in turns]
        for op, arg in later:
            if op == "write":
                at = clock.now_ms()
                clock.set(at - arg["age"])  # may be stamped before rows already held
                await put(stm, arg)
                clock.set(at)
            elif op == "delete":
                await stm.engine.delete_memories(MemoryFilter(channel_id=arg))
            else:
                clock.advance(ms=arg)
            out += [await build(stm, t) for t in turns]
    return out


async def build(stm: Stm, fields: dict[str, Any]) -> StmContext:
    return await stm.build_context(make_turn(**fields))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_per_view=st.integers(1, 4), cap=st.integers(0, 4),
       private=st.frozensets(st.sampled_from(CHANNELS), max_size=3), bypass=st.booleans(),
       opt_in=st.booleans(), rows=st.lists(ROW, max_size=24),
       later=st.lists(LATER, max_size=6), turns=st.lists(TURN, min_size=1, max_size=3))
def test_a_bounded_cache_builds_what_an_unbounded_one_builds(
        rows_per_view: int, cap: int, private: frozenset[str], bypass: bool, opt_in: bool,
        rows: list[dict[str, Any]], later: list[tuple[str, Any]],
        turns: list[dict[str, Any]]) -> None:
    args = (cap, private, bypass, opt_in, rows, later, turns)
    bounded = asyncio.run(builds(rows_per_view, *args))
    unbounded = asyncio.run(builds(100_000, *args))
    assert bounded == unbounded
