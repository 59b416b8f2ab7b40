"""The janitor: batched purges, the cache rule, the interval task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.plugins import create_plugin_manager
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from stm_plugins.memory_storage import MemoryAdapter

from .helpers import OpenStm, turn

RETENTION_DAYS = 90
SETTINGS = Settings(janitor_batch_size=10, janitor_pause_ms=0)


async def age_rows(stm: Stm, clock: ManualClock, old: int, fresh: int) -> None:
    """``old`` channels written now, then ``fresh`` ones after the retention period."""
    for i in range(old):
        await stm.engine.capture(turn(f"old{i}", now=clock.now_ms()))
    clock.advance(days=RETENTION_DAYS, seconds=1)
    for i in range(fresh):
        await stm.engine.capture(turn(f"new{i}", now=clock.now_ms()))


async def test_a_backlog_is_purged_in_batches(open_stm: OpenStm, db_url: str,
                                              clock: ManualClock) -> None:
    async with open_stm(db_url, settings=SETTINGS) as stm:
        await age_rows(stm, clock, old=18, fresh=2)  # 36 old rows, 4 fresh
        seen: list[int] = []
        deleted = await stm.janitor.run_once(progress=seen.append)
        assert deleted == 36
        assert seen == [10, 20, 30, 36]
        assert await stm.adapter.count_memories() == 4
        assert await stm.janitor.run_once() == 0


async def test_rows_touched_inside_the_retention_survive(open_stm: OpenStm, sqlite_url: str,
                                                         clock: ManualClock) -> None:
    async with open_stm(sqlite_url, settings=SETTINGS) as stm:
        await stm.engine.capture(turn("c1", now=clock.now_ms()))
        clock.advance(days=RETENTION_DAYS)  # exactly at the cutoff: not older than it
        assert await stm.janitor.run_once() == 0
        assert await stm.adapter.count_memories() == 2


async def test_purged_rows_leave_the_cache(open_stm: OpenStm, sqlite_url: str,
                                           clock: ManualClock) -> None:
    async with open_stm(sqlite_url, settings=SETTINGS) as stm:
        server_view = await stm.engine.server_memories("g1")
        user_view = await stm.engine.user_view("u1")
        await age_rows(stm, clock, old=3, fresh=1)
        old_keys = [MemoryKey.server("g1", f"old{i}", None) for i in range(3)]
        old_user_keys = [MemoryKey.user("u1", f"old{i}", None, "g1") for i in range(3)]
        assert all(k in server_view.records for k in old_keys)
        assert all(k in user_view.memories.records for k in old_user_keys)

        assert await stm.janitor.run_once() == 6

        assert stm.cache.servers.peek("g1") is server_view
        for key in old_keys:
            assert key not in server_view.records and key in server_view.absent
            assert await stm.engine.live_record(key) is None
        for key in old_user_keys:
            assert key not in user_view.memories.records
        assert MemoryKey.server("g1", "new0", None) in server_view.records


async def test_an_empty_run_logs_nothing(open_stm: OpenStm, sqlite_url: str,
                                         caplog: pytest.LogCaptureFixture) -> None:
    async with open_stm(sqlite_url) as stm:
        with caplog.at_level(logging.INFO, logger="stm.janitor"):
            assert await stm.janitor.run_once() == 0
        assert not [r for r in caplog.records if r.name == "stm.janitor"]


async def test_a_run_with_deletions_logs_the_total(open_stm: OpenStm, sqlite_url: str,
                                                   clock: ManualClock,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    async with open_stm(sqlite_url, settings=SETTINGS) as stm:
        await age_rows(stm, clock, old=2, fresh=0)
        with caplog.at_level(logging.INFO, logger="stm.janitor"):
            await stm.janitor.run_once()
        assert any("deleted 4 " in r.getMessage() for r in caplog.records)


async def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    for _ in range(int(timeout_s / 0.005)):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition not reached in time")


async def test_start_runs_on_the_interval_until_stopped(open_stm: OpenStm, sqlite_url: str,
                                                        clock: ManualClock) -> None:
    async with open_stm(sqlite_url, settings=SETTINGS) as stm:
        stm.janitor.start(interval_s=0.01, first_delay_s=0)
        await wait_for(lambda: stm.janitor.runs >= 2)
        await age_rows(stm, clock, old=2, fresh=1)
        await wait_for(lambda: stm.janitor.runs >= 5)
        assert await stm.adapter.count_memories() == 2
        await stm.janitor.stop()
        assert not stm.janitor.running
        runs = stm.janitor.runs
        await asyncio.sleep(0.05)
        assert stm.janitor.runs == runs


async def test_starting_twice_is_a_warned_no_op(open_stm: OpenStm, caplog: pytest.LogCaptureFixture
                                                ) -> None:
    async with open_stm("memory://") as stm:
        stm.janitor.start(interval_s=60, first_delay_s=60)
        task = stm.janitor._task
        with caplog.at_level(logging.WARNING, logger="stm.janitor"):
            stm.janitor.start(interval_s=0.01, first_delay_s=0)
        assert stm.janitor._task is task
        assert any("already running" in r.getMessage() for r in caplog.records)


class FlakyAdapter(MemoryAdapter):
    """Fails the first purge, as a database that went away for a moment would."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    async def purge_older_than(self, cutoff_ms: int, *, batch_size: int) -> int:
        if self.failures:
            self.failures -= 1
            raise StorageError("connection lost")
        return await super().purge_older_than(cutoff_ms, batch_size=batch_size)


async def test_a_failed_run_is_logged_and_the_interval_goes_on(
        clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    stm = Stm(FlakyAdapter(), pm=create_plugin_manager(load_entrypoints=False),
              settings=SETTINGS, clock=clock)
    await stm.setup()
    await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g1", "c1", None), messages=(),
                                    now_ms=clock.now_ms())])
    clock.advance(days=RETENTION_DAYS + 1)
    with caplog.at_level(logging.ERROR, logger="stm.janitor"):
        stm.janitor.start(interval_s=0.01, first_delay_s=0)
        await wait_for(lambda: stm.janitor.runs >= 2)
    await stm.aclose()
    assert any("janitor run failed" in r.getMessage() for r in caplog.records)
    assert await stm.adapter.count_memories() == 0
    assert not stm.janitor.running


async def test_closing_the_store_stops_the_janitor(open_stm: OpenStm, sqlite_url: str
                                                   ) -> None:
    async with open_stm(sqlite_url, start_janitor=True) as stm:
        assert stm.janitor.running
    assert not stm.janitor.running


async def test_a_stopped_purge_reloads_the_views_it_may_have_touched_and_no_other(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock) -> None:
    """A purge stopped half-way deleted an unknown part of the rows older than
    its cutoff: the views holding such a row reload; a view whose rows are all
    at the cutoff or newer is kept (the purge never deletes those)."""
    async with open_stm(sqlite_url, settings=SETTINGS) as stm:
        await stm.engine.capture(turn("c1", guild="g1", user="u1", now=clock.now_ms()))
        await stm.engine.capture(turn("c1", guild="g2", user="u2", now=clock.now_ms() + 1))
        views = {g: await stm.engine.server_memories(g) for g in ("g1", "g2")}
        users = {u: await stm.engine.user_view(u) for u in ("u1", "u2")}
        since = stm.engine.change_mark()

        stm.engine.purged(clock.now_ms() + 1, since, finished=False)

        assert stm.cache.servers.peek("g1") is None
        assert stm.cache.users.peek("u1") is None
        assert stm.cache.servers.peek("g2") is views["g2"]
        assert stm.cache.users.peek("u2") is users["u2"]
