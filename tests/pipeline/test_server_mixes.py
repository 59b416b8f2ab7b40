"""A warm build in a big server reads nothing and walks a bounded number of rows,
whatever the server's mix.

Each mix fills a server with many more rows than its view keeps, in the
shape that used to send every build back to the database for the whole
server: all rows sharing one time; another lineage's rows the newest; private
channels' rows the newest; most rows threads of a few parents; most rows
expired but inside the load window. After the first builds (which may read
once), every build must make no storage read, show what a store whose view
holds every row shows, and walk at most the rows it shows plus two.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from bench.scenarios_server_mix import READS, count_reads
from stm_core._util.clock import ManualClock
from stm_core.engine.cache import MAX_SCOPES_PER_VIEW
from stm_core.models import CrudeMessage, Turn
from stm_core.pipeline import recent
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryRecord, MemoryWrite

from .support import GUILD, OpenStm, make_turn, other_text, server_key, set_settings

HOUR = 3_600_000
ROWS = 300  # in the server
VIEW = 20  # rows a view keeps
CAP = 3
#: Rows a warm build's walk may pass beyond those it shows: its own channel's.
SLACK = 2


def summary(channel: str, at: int, *, lineage: str | None = None,
            parent: str | None = None) -> MemoryWrite:
    return MemoryWrite(key=server_key(channel), now_ms=at, set_summary=True,
                       summary=f"plan in {channel}", persona_lineage_id=lineage,
                       parent_channel_id=parent)


def crude(channel: str, at: int) -> CaptureWrite:
    line = CrudeMessage(role="user", speaker_name=None, content=f"hi in {channel}",
                        timestamp_ms=at)
    return CaptureWrite(key=server_key(channel), messages=(line,), now_ms=at)


Mix = tuple[list[MemoryWrite], list[CaptureWrite], dict[str, Any], Turn]


def mix(name: str, now: int) -> Mix:
    """The writes of one mix, the server's settings and the turn built."""
    older = now - HOUR
    if name == "ties":
        return ([summary(f"c{n}", older) for n in range(ROWS)], [], {}, make_turn())
    if name == "other_lineage_newest":
        return ([summary(f"c{n}", older + n, lineage="mine" if n < ROWS - 100 else "theirs")
                 for n in range(ROWS)], [], {}, make_turn(persona_lineage_id="mine"))
    if name == "private_newest":
        private = frozenset(f"c{n}" for n in range(ROWS - 100, ROWS))
        return ([summary(f"c{n}", older + n) for n in range(ROWS)], [],
                {"private_channel_ids": private}, make_turn())
    if name == "threads":
        return ([summary(f"t{n}", older + n, parent=f"p{n % 3}") if n % 10 else
                 summary(f"c{n}", older + n) for n in range(ROWS)], [], {},
                make_turn(channel_id="t-new", parent_channel_id="p1"))
    assert name == "mostly_expired"
    # Crude rows expire after 12 h, summaries after 24 h: the newest rows are
    # crude and expired, the ones that show are older summaries.
    return ([summary(f"s{n}", now - 20 * HOUR + n) for n in range(ROWS // 3)],
            [crude(f"c{n}", now - 13 * HOUR + n) for n in range(ROWS - ROWS // 3)], {},
            make_turn())


MIXES = ("ties", "other_lineage_newest", "private_newest", "threads", "mostly_expired")


def count_walks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the rows the build's walk takes from the cached rows."""
    walked = {"rows": 0}
    real = recent.first_visible

    def counting(rows: Iterable[MemoryRecord], *args: Any, **kwargs: Any
                 ) -> list[MemoryRecord]:
        def each() -> Iterator[MemoryRecord]:
            for row in rows:
                walked["rows"] += 1
                yield row
        result: list[MemoryRecord] = real(each(), *args, **kwargs)
        return result
    monkeypatch.setattr(recent, "first_visible", counting)
    return walked


@pytest.mark.parametrize("name", MIXES)
async def test_a_warm_build_reads_nothing_and_walks_what_it_shows(
        name: str, open_stm: OpenStm, db_url: str, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    memories, captures, server, turn = mix(name, clock.now_ms())
    bounded = Settings(cache_max_rows_per_view=VIEW, max_other_channels=CAP)
    async with open_stm(db_url, settings=bounded) as stm:
        if server:
            await set_settings(stm, **server)
        if memories:
            await stm.engine.write_memory(memories)
        if captures:
            await stm.engine.capture(captures)
        for _ in range(2):  # the first builds load the views and may read once more
            first = other_text(await stm.build_context(turn))
        reads = count_reads(stm)
        walked = count_walks(monkeypatch)
        builds = 5
        for _ in range(builds):
            assert other_text(await stm.build_context(turn)) == first
        assert reads == dict.fromkeys(READS, 0)
        # The walk passes the rows it shows and its own channel's.
        assert 0 < walked["rows"] <= builds * (CAP + SLACK)
        view = await stm.engine.server_memories(GUILD)
        assert len(view.records) <= VIEW
    monkeypatch.undo()
    async with open_stm(db_url, settings=Settings(max_other_channels=CAP)) as unbounded:
        expected = other_text(await unbounded.build_context(turn))
    assert first == expected
    assert first is not None and first.count("plan in") + first.count("hi in") == CAP


async def test_a_view_and_its_scopes_stay_bounded(open_stm: OpenStm, db_url: str,
                                                  clock: ManualClock) -> None:
    """Builds of many lineages, with private channels coming and going, and
    writes after each: the view keeps a bounded number of scopes, each of
    bounded size, however many rows and scopes were asked for."""
    async with open_stm(db_url, settings=Settings(cache_max_rows_per_view=VIEW,
                                                  max_other_channels=CAP)) as stm:
        lineages = [f"L{n}" for n in range(3 * MAX_SCOPES_PER_VIEW)]
        await stm.engine.write_memory([summary(f"c{n}", clock.now_ms() - n, lineage=lineages[n % 6])
                                for n in range(ROWS)])
        for round_ in range(3):
            await set_settings(stm, private_channel_ids=frozenset({f"c{round_}"}))
            for n, lineage in enumerate(lineages):
                clock.advance(ms=1)
                await stm.build_context(make_turn(persona_lineage_id=lineage))
                await stm.engine.write_memory([summary(f"new{round_}-{n}", clock.now_ms(),
                                                lineage=lineage)])
        view = await stm.engine.server_memories(GUILD)
        assert len(view.records) == VIEW
        assert VIEW < view.rows_held() <= (1 + MAX_SCOPES_PER_VIEW) * VIEW


async def test_a_janitor_purge_reaches_the_rows_kept_for_a_scope(
        open_stm: OpenStm, db_url: str, clock: ManualClock) -> None:
    """Retention shorter than the summary TTL: rows a scope holds, but the view
    dropped, are purged from the cache too (not shown after the purge)."""
    env = Settings(cache_max_rows_per_view=4, max_other_channels=1,
                   janitor_retention_days=0.5)
    now = clock.now_ms()
    async with open_stm(db_url, settings=env) as stm:
        await stm.engine.write_memory([summary(f"old{n}", now - 20 * HOUR + n, lineage="mine")
                                for n in range(3)])
        await stm.engine.write_memory([summary(f"new{n}", now - n, lineage="theirs")
                                for n in range(8)])
        turn = make_turn(persona_lineage_id="mine")
        before = other_text(await stm.build_context(turn))
        assert before is not None and "plan in old2" in before
        assert await stm.janitor.run_once() == 3
        assert other_text(await stm.build_context(turn)) is None


async def test_writes_and_deletes_during_a_scopes_read_are_kept(
        open_stm: OpenStm, db_url: str, clock: ManualClock) -> None:
    """A scope is read while the server keeps writing: a row written after
    the read's snapshot is kept, and a row deleted after it does not come
    back from what the read returned."""
    env = Settings(cache_max_rows_per_view=4, max_other_channels=2)
    now = clock.now_ms()
    async with open_stm(db_url, settings=env) as stm:
        await stm.engine.write_memory([summary(f"old{n}", now - HOUR + n, lineage="mine")
                                for n in range(10)])
        await stm.engine.write_memory([summary(f"new{n}", now - n, lineage="theirs")
                                for n in range(10)])
        await stm.engine.server_memories(GUILD)  # the view (its newest rows: theirs)
        adapter, read = stm.adapter, stm.adapter.newest_server_memories  # type: ignore[attr-defined]
        snapshot_taken, go_on = asyncio.Event(), asyncio.Event()

        async def slow_read(*args: Any, **kwargs: Any) -> Any:
            rows = await read(*args, **kwargs)
            snapshot_taken.set()
            await go_on.wait()
            return rows
        adapter.newest_server_memories = slow_read  # type: ignore[attr-defined]
        turn = make_turn(persona_lineage_id="mine")
        build = asyncio.create_task(stm.build_context(turn))
        await snapshot_taken.wait()
        clock.advance(ms=1)
        await stm.engine.delete_memories(MemoryFilter(channel_id="old9"))
        await stm.engine.write_memory([summary("fresh", clock.now_ms(), lineage="mine")])
        go_on.set()
        during = other_text(await build)
        adapter.newest_server_memories = read  # type: ignore[attr-defined]
        after = other_text(await stm.build_context(turn))
    async with open_stm(db_url, settings=Settings(max_other_channels=2)) as unbounded:
        expected = other_text(await unbounded.build_context(turn))
    assert expected is not None and "plan in fresh" in expected and "old9" not in expected
    assert after == expected
    assert during is not None and "old9" not in during
