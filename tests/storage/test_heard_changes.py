"""What a store does when it hears of another process's change: the purge
or row it is told of reaches its cache, versioned like its own changes.

On PostgreSQL the listener hears these notices (tests/reliability/
test_invalidation.py). Here two stores share one SQLite file: one writes,
and the other is told of it the way its listener would tell it, so each
rule is shown without a second database process. After each notice the told
store must answer as a store freshly opened on the file does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm

from .helpers import OpenStm, turn

SETTINGS = Settings(janitor_batch_size=10, janitor_pause_ms=0)
OLD = MemoryKey.server("g1", "old", None)
NEW = MemoryKey.server("g1", "new", None)


def probe(channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id="g1")


@asynccontextmanager
async def writer_and_told(open_stm: OpenStm, url: str) -> AsyncIterator[tuple[Stm, Stm]]:
    async with open_stm(url, settings=SETTINGS) as writer, \
            open_stm(url, settings=SETTINGS) as told:
        yield writer, told


async def same_as_fresh(open_stm: OpenStm, url: str, told: Stm, *channels: str) -> None:
    async with open_stm(url, settings=SETTINGS) as fresh:
        for channel in channels:
            assert await told.build_context(probe(channel)) == \
                await fresh.build_context(probe(channel)), channel


async def test_a_purge_heard_of_forgets_the_purged_rows_and_keeps_the_newer(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock) -> None:
    async with writer_and_told(open_stm, sqlite_url) as (writer, told):
        await writer.engine.capture(turn("old", now=clock.now_ms()))
        view = await told.engine.server_memories("g1")
        clock.advance(days=90, seconds=1)
        await writer.engine.capture(turn("new", now=clock.now_ms()))
        await told.engine.reread(NEW)
        assert OLD in view.records and NEW in view.records

        assert await writer.janitor.run_once() == 2
        told.engine.heard_purge(clock.now_ms() - SETTINGS.retention_ms)

        assert told.cache.servers.peek("g1") is view  # kept, not reloaded
        assert OLD not in view.records and NEW in view.records
        assert await told.engine.live_record(OLD) is None
        await same_as_fresh(open_stm, sqlite_url, told, "old", "new")


async def test_a_changed_row_heard_of_is_read_again(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock) -> None:
    async with writer_and_told(open_stm, sqlite_url) as (writer, told):
        await writer.engine.capture(turn("new", now=clock.now_ms()))
        view = await told.engine.server_memories("g1")
        clock.advance(minutes=1)
        [written] = await writer.engine.write_memory(
            [MemoryWrite(key=NEW, set_summary=True, summary="the party rests",
                         now_ms=clock.now_ms())])

        await told.engine.reread(NEW)

        assert told.cache.servers.peek("g1") is view
        assert view.records[NEW] == written
        await same_as_fresh(open_stm, sqlite_url, told, "new")


async def test_a_deleted_row_heard_of_is_forgotten(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock) -> None:
    async with writer_and_told(open_stm, sqlite_url) as (writer, told):
        await writer.engine.capture(turn("old", now=clock.now_ms()))
        await writer.engine.capture(turn("new", now=clock.now_ms()))
        view = await told.engine.server_memories("g1")
        await writer.admin.clear_channel(channel_id="old")

        await told.engine.reread(OLD)

        assert told.cache.servers.peek("g1") is view
        assert OLD not in view.records and OLD in view.absent
        assert NEW in view.records
        await same_as_fresh(open_stm, sqlite_url, told, "old", "new")


async def test_a_row_that_cannot_be_read_again_drops_its_view(
        open_stm: OpenStm, sqlite_url: str, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the row changed is unknown: the view reloads on its next read."""
    async with writer_and_told(open_stm, sqlite_url) as (writer, told):
        await writer.engine.capture(turn("new", now=clock.now_ms()))
        await told.engine.server_memories("g1")
        users = await told.engine.user_view("u1")
        await writer.admin.clear_channel(channel_id="new")

        async def unreachable(key: MemoryKey) -> None:
            raise StorageError("the database went away")

        monkeypatch.setattr(told.adapter, "get_memory", unreachable)
        with pytest.raises(StorageError):
            await told.engine.reread(NEW)
        monkeypatch.undo()

        assert told.cache.servers.peek("g1") is None
        assert told.cache.users.peek("u1") is users  # another scope: kept
        await same_as_fresh(open_stm, sqlite_url, told, "new")
