"""A caller cancelled mid-write must not leave the cache behind the database."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from stm_core.errors import StorageError
from stm_core.models import CrudeMessage
from stm_core.settings import Settings
from stm_core.storage.protocol import WriteReport, reports_write_outcomes
from stm_core.storage.records import (
    CaptureWrite,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
)
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from stm_plugins.sqlalchemy_storage.urls import SqliteTarget
from tests.conftest import OpenStm


async def test_cancelled_capture_still_reaches_the_cache(open_stm: OpenStm,
                                                         backend_url: str) -> None:
    # SQLite: every write on the writer thread. A lone write run inline never
    # suspends, so nothing can cancel it mid-write.
    settings = attrs.evolve(Settings(), sqlite_inline_writes=False)
    async with open_stm(backend_url, settings=settings) as stm:
        key = MemoryKey.server("g1", "c1", "p1")
        view = await stm.engine.server_memories("g1")  # a warm view the write must reach
        message = CrudeMessage(role="user", content="hi", speaker_name="Ann",
                               timestamp_ms=stm.clock.now_ms())
        write = CaptureWrite(key=key, messages=(message,), now_ms=stm.clock.now_ms(),
                             counter_increment=1)
        await stm.engine.capture([write])  # the row exists with counter 1

        caller = asyncio.create_task(stm.engine.capture([write]))
        await asyncio.sleep(0)  # the write is queued or running
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller

        for _ in range(200):
            stored = await stm.adapter.get_memory(key)
            cached = view.records.get(key)
            if stored is not None and cached == stored:
                break
            await asyncio.sleep(0.01)
        assert stored is not None
        assert stored.turns_since_refresh in (1, 2)
        assert view.records[key] == stored


async def test_sqlite_caller_cancelled_while_its_write_is_held_in_the_writer(
        open_stm: OpenStm, tmp_path: Path) -> None:
    """The SQLite store runs a write in the caller's own task: cancelling the
    caller while the write waits in the writer's queue must still bring the
    committed row into the cache once the writer gets to it."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        key = MemoryKey.server("g1", "c1", "p1")
        view = await stm.engine.server_memories("g1")
        message = CrudeMessage(role="user", content="hi", speaker_name="Ann",
                               timestamp_ms=stm.clock.now_ms())
        write = CaptureWrite(key=key, messages=(message,), now_ms=stm.clock.now_ms(),
                             counter_increment=1)
        await stm.engine.capture([write])

        busy, release = threading.Event(), threading.Event()

        def hold(_conn: object, _arg: object) -> None:
            busy.set()
            release.wait(10)

        holding = asyncio.create_task(adapter.writer.run(hold, None))
        await asyncio.to_thread(busy.wait, 10)  # the writer thread is inside ``hold``
        caller = asyncio.create_task(stm.engine.capture([write]))
        while adapter.writer.queued() == 0:  # the capture is queued behind it
            await asyncio.sleep(0.001)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert view.records[key].turns_since_refresh == 1  # not written yet
        release.set()
        await holding
        for _ in range(200):  # the outcome reaches the loop just after the commit
            if view.records[key].turns_since_refresh == 2:
                break
            await asyncio.sleep(0.005)

        stored = await adapter.get_memory(key)
        assert stored is not None and stored.turns_since_refresh == 2
        assert view.records[key] == stored


def test_reported_writes_are_used_only_where_the_class_defines_both_twins() -> None:
    """A subclass that overrides ``capture`` alone, or a wrapper that forwards
    attributes to the adapter, keeps its own ``capture`` in the store's path."""
    class OwnCapture(SqliteAdapter):
        async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
            return await super().capture(writes)

    class BothTwins(OwnCapture):
        async def capture_reported(self, writes: Sequence[CaptureWrite],
                                   report: WriteReport | None) -> list[MemoryRecord]:
            return await super().capture_reported(writes, report)

    class Forwarding:
        def __init__(self, inner: SqliteAdapter) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    plain = SqliteAdapter(SqliteTarget(path=None))
    assert reports_write_outcomes(plain)
    assert not reports_write_outcomes(OwnCapture(SqliteTarget(path=None)))
    assert reports_write_outcomes(BothTwins(SqliteTarget(path=None)))
    assert not reports_write_outcomes(Forwarding(plain))


async def test_sqlite_write_that_fails_after_its_caller_was_cancelled_drops_the_views(
        open_stm: OpenStm, tmp_path: Path) -> None:
    """A failed write may have left the rows in any state the cache cannot
    know: its scopes are dropped (and reload) even with nobody waiting."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        await stm.engine.server_memories("g1")
        # SQLite cannot bind an object: the write fails in the writer thread.
        bad = CaptureWrite(key=MemoryKey.server("g1", "c1", "p1"), messages=(),
                           now_ms=stm.clock.now_ms(),
                           parent_channel_id=object())  # type: ignore[arg-type]
        busy, release = threading.Event(), threading.Event()

        def hold(_conn: object, _arg: object) -> None:
            busy.set()
            release.wait(10)

        holding = asyncio.create_task(adapter.writer.run(hold, None))
        await asyncio.to_thread(busy.wait, 10)
        caller = asyncio.create_task(stm.engine.capture([bad]))
        while adapter.writer.queued() == 0:
            await asyncio.sleep(0.001)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert stm.cache.servers.fresh("g1") is not None
        release.set()
        await holding
        await _until_dropped(stm, "g1")
        assert stm.cache.servers.fresh("g1") is None
        assert adapter.writer.stats.failed_jobs == 1


async def _until_dropped(stm: Any, server_id: str) -> None:
    """Wait (a second at most) for a write nobody awaits to drop the server's view."""
    for _ in range(200):
        if stm.cache.servers.peek(server_id) is None:
            return
        await asyncio.sleep(0.005)


def _write(key: MemoryKey, now_ms: int) -> CaptureWrite:
    message = CrudeMessage(role="user", content="hi", speaker_name="Ann", timestamp_ms=now_ms)
    return CaptureWrite(key=key, messages=(message,), now_ms=now_ms, counter_increment=1)


async def test_a_write_that_commits_then_fails_after_its_caller_was_cancelled_drops_its_view(
        open_stm: OpenStm, monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter without reported writes: the write goes on in a task of its
    own, and when it fails (here after its commit, as when the connection is
    lost during COMMIT) the views of its keys drop, so the next read shows
    what the database holds."""
    async with open_stm("memory://") as stm:
        assert not reports_write_outcomes(stm.adapter)
        key = MemoryKey.server("g1", "c1", "p1")
        view = await stm.engine.server_memories("g1")
        users = await stm.engine.user_view("u1")
        commit = asyncio.Event()
        real_capture = stm.adapter.capture

        async def commit_then_lose(writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
            await commit.wait()
            await real_capture(writes)
            raise StorageError("the connection was lost during COMMIT")

        monkeypatch.setattr(stm.adapter, "capture", commit_then_lose)
        caller = asyncio.create_task(stm.engine.capture([_write(key, stm.clock.now_ms())]))
        await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert stm.cache.servers.peek("g1") is view
        commit.set()
        await _until_dropped(stm, "g1")
        assert stm.cache.servers.peek("g1") is None
        assert stm.cache.users.peek("u1") is users  # not a scope of the write
        monkeypatch.undo()
        assert key in (await stm.engine.server_memories("g1")).records


async def test_a_user_delete_that_fails_reloads_that_users_view_and_no_other(
        open_stm: OpenStm, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which of the user's rows went is unknown: their view reloads; the views
    of other users and of servers hold none of those rows and stay."""
    async with open_stm(sqlite_url) as stm:
        now = stm.clock.now_ms()
        for user in ("u1", "u2"):
            await stm.engine.capture([_write(MemoryKey.user(user, "c1", None, "g1"), now)])
        await stm.engine.capture([_write(MemoryKey.server("g1", "c1", None), now)])
        server = await stm.engine.server_memories("g1")
        other = await stm.engine.user_view("u2")
        await stm.engine.user_view("u1")
        real_delete = stm.adapter.delete_memories

        async def delete_then_lose(flt: MemoryFilter) -> list[MemoryKey]:
            await real_delete(flt)
            raise StorageError("the connection was lost during COMMIT")

        monkeypatch.setattr(stm.adapter, "delete_memories", delete_then_lose)
        with pytest.raises(StorageError):
            await stm.engine.delete_memories(MemoryFilter(user_id="u1", scope_kind="user"))
        monkeypatch.undo()

        assert stm.cache.users.peek("u1") is None
        assert stm.cache.users.peek("u2") is other
        assert stm.cache.servers.peek("g1") is server
        assert not (await stm.engine.user_view("u1")).memories.records


async def test_a_failed_sqlite_write_raises_our_error_and_drops_its_view(
        open_stm: OpenStm, tmp_path: Path) -> None:
    """The caller waits for a write that fails: it gets the storage error, and
    the view the write may have changed reloads."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        assert reports_write_outcomes(stm.adapter)
        await stm.engine.server_memories("g1")
        users = await stm.engine.user_view("u1")
        # SQLite cannot bind an object: the write fails in the writer thread.
        bad = CaptureWrite(key=MemoryKey.server("g1", "c1", "p1"), messages=(),
                           now_ms=stm.clock.now_ms(),
                           parent_channel_id=object())  # type: ignore[arg-type]
        with pytest.raises(StorageError):
            await stm.engine.capture([bad])
        assert stm.cache.servers.peek("g1") is None
        assert stm.cache.users.peek("u1") is users


async def test_a_write_whose_rows_cannot_be_mirrored_drops_their_view(
        open_stm: OpenStm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write committed after its caller was cancelled, and putting its
    rows into the cache failed half way: the view may hold some of them and
    not others, so it drops, and the next read shows what the database
    holds (the error goes to the log: nobody waits for it)."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        adapter = stm.adapter
        assert isinstance(adapter, SqliteAdapter)
        key = MemoryKey.server("g1", "c1", "p1")
        await stm.engine.server_memories("g1")
        users = await stm.engine.user_view("u1")
        busy, release = threading.Event(), threading.Event()

        def hold(_conn: object, _arg: object) -> None:
            busy.set()
            release.wait(10)

        def broken_apply(records: Sequence[MemoryRecord], since: int) -> None:
            raise RuntimeError("the cache could not take the rows")

        holding = asyncio.create_task(adapter.writer.run(hold, None))
        await asyncio.to_thread(busy.wait, 10)
        caller = asyncio.create_task(stm.engine.capture([_write(key, stm.clock.now_ms())]))
        while adapter.writer.queued() == 0:
            await asyncio.sleep(0.001)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        monkeypatch.setattr(stm.cache, "apply", broken_apply)
        release.set()
        await holding
        await _until_dropped(stm, "g1")
        monkeypatch.undo()
        assert stm.cache.servers.peek("g1") is None
        assert stm.cache.users.peek("u1") is users  # not a scope of the write
        assert key in (await stm.engine.server_memories("g1")).records


async def test_a_failed_summary_write_raises_our_error_and_drops_its_view(
        open_stm: OpenStm, tmp_path: Path) -> None:
    """The same for a summary or category write (the tool's, an admin edit)."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        assert reports_write_outcomes(stm.adapter)
        await stm.engine.server_memories("g1")
        users = await stm.engine.user_view("u1")
        bad = MemoryWrite(key=MemoryKey.server("g1", "c1", "p1"), now_ms=stm.clock.now_ms(),
                          set_summary=True, summary="the plan",
                          parent_channel_id=object())  # type: ignore[arg-type]
        with pytest.raises(StorageError):
            await stm.engine.write_memory([bad])
        assert stm.cache.servers.peek("g1") is None
        assert stm.cache.users.peek("u1") is users


class SlottedAdapter:
    """An adapter class of its own with ``__slots__`` (no instance ``__dict__``)
    that reports its writes: here it hands every call to a SQLite adapter."""

    __slots__ = ("_inner",)

    def __init__(self, inner: SqliteAdapter) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # its own object model: no ``__dict__`` borrowed
            raise AttributeError(name)
        return getattr(self._inner, name)

    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        return await self._inner.capture(writes)

    async def capture_reported(self, writes: Sequence[CaptureWrite],
                               report: WriteReport | None) -> list[MemoryRecord]:
        return await self._inner.capture_reported(writes, report)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        return await self._inner.write_memory(writes)

    async def write_memory_reported(self, writes: Sequence[MemoryWrite],
                                    report: WriteReport | None) -> list[MemoryRecord]:
        return await self._inner.write_memory_reported(writes, report)


async def test_an_adapter_with_slots_reports_its_writes_to_the_cache(
        open_stm: OpenStm, tmp_path: Path) -> None:
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        inner = stm.adapter
        assert isinstance(inner, SqliteAdapter)
        slotted = SlottedAdapter(inner)
        assert reports_write_outcomes(slotted)
        stm.engine.adapter = slotted  # type: ignore[assignment]
        try:
            view = await stm.engine.server_memories("g1")
            key = MemoryKey.server("g1", "c1", None)
            (written,) = await stm.engine.capture([_write(key, stm.clock.now_ms())])
            assert view.records[key] == written
        finally:
            stm.engine.adapter = inner
