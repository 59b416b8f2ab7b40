"""A cold read goes to the database once however many callers ask for it at
the same time, and each scope gets its own answer: concurrent reads of one
server's settings, one server's rows or one user's view share a call;
reads of different scopes, or of different kinds under one id, never do."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from stm_core.errors import StorageError
from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from tests.conftest import OpenStm


def _write(key: MemoryKey, now_ms: int, text: str) -> CaptureWrite:
    line = CrudeMessage(role="user", content=text, speaker_name="Ann", timestamp_ms=now_ms)
    return CaptureWrite(key=key, messages=(line,), now_ms=now_ms, counter_increment=1)


async def _seeded(open_stm: OpenStm, tmp_path: Path) -> str:
    """A SQLite file holding rows, settings and preferences that differ
    between ``g1``/``g2`` and ``u1``/``u2``; each test then opens a store on
    it with a cold cache."""
    url = f"sqlite:///{tmp_path / 'stm.db'}"
    async with open_stm(url) as stm:
        await _seed(stm)
    return url


async def _seed(stm: Stm) -> None:
    now = stm.clock.now_ms()
    for n in ("1", "2"):
        await stm.engine.capture([_write(MemoryKey.server(f"g{n}", f"c{n}", None), now,
                                         f"server g{n}"),
                                  _write(MemoryKey.user(f"u{n}", f"d{n}", None, None), now,
                                         f"user u{n}")])
    await stm.admin.set_server_params("g1", refresh_cadence=3)
    await stm.admin.set_server_params("g2", refresh_cadence=7)
    await stm.admin.set_user_opt_in("u2", opt_in=True)


async def test_concurrent_cold_reads_of_one_scope_share_one_database_call(
        open_stm: OpenStm, tmp_path: Path) -> None:
    url = await _seeded(open_stm, tmp_path)
    async with open_stm(url) as stm:
        engine, stats = stm.engine, stm.cache.stats
        misses = stats.misses
        first, second = await asyncio.gather(engine.server_memories("g1"),
                                             engine.server_memories("g1"))
        assert first is second
        assert [r.messages[0].content for r in first.records.values()] == ["server g1"]
        assert stats.misses == misses + 1

        a, b, c = await asyncio.gather(engine.server_settings("g1"),
                                       engine.server_settings("g1"),
                                       engine.server_settings("g1"))
        assert a is b is c
        assert a.refresh_cadence == 3
        assert stats.misses == misses + 2

        one, two = await asyncio.gather(engine.user_view("u2"), engine.user_view("u2"))
        assert one is two
        assert one.prefs.crossserver_opt_in
        assert [r.messages[0].content for r in one.memories.records.values()] == ["user u2"]
        assert stats.misses == misses + 3


async def test_concurrent_cold_reads_of_different_scopes_each_get_their_own(
        open_stm: OpenStm, tmp_path: Path) -> None:
    url = await _seeded(open_stm, tmp_path)
    async with open_stm(url) as stm:
        engine = stm.engine
        g1, g2 = await asyncio.gather(engine.server_memories("g1"),
                                      engine.server_memories("g2"))
        assert [r.messages[0].content for r in g1.records.values()] == ["server g1"]
        assert [r.messages[0].content for r in g2.records.values()] == ["server g2"]

        s1, s2 = await asyncio.gather(engine.server_settings("g1"),
                                      engine.server_settings("g2"))
        assert (s1.server_id, s1.refresh_cadence) == ("g1", 3)
        assert (s2.server_id, s2.refresh_cadence) == ("g2", 7)

        u1, u2 = await asyncio.gather(engine.user_view("u1"), engine.user_view("u2"))
        assert not u1.prefs.crossserver_opt_in and u2.prefs.crossserver_opt_in
        assert [r.messages[0].content for r in u1.memories.records.values()] == ["user u1"]
        assert [r.messages[0].content for r in u2.memories.records.values()] == ["user u2"]


async def test_cold_reads_of_different_kinds_under_one_id_do_not_share_a_call(
        open_stm: OpenStm, tmp_path: Path) -> None:
    """A server and a user may carry the same id: its settings, its server
    rows and the user's view are three reads."""
    url = f"sqlite:///{tmp_path / 'stm.db'}"
    async with open_stm(url) as seeding:
        now = seeding.clock.now_ms()
        await seeding.engine.capture([
            _write(MemoryKey.server("x", "c1", None), now, "server x"),
            _write(MemoryKey.user("x", "d1", None, None), now, "user x")])
        await seeding.admin.set_server_params("x", refresh_cadence=5)
    async with open_stm(url) as stm:
        engine = stm.engine
        settings, rows, user = await asyncio.gather(
            engine.server_settings("x"), engine.server_memories("x"), engine.user_view("x"))
        assert settings.refresh_cadence == 5
        assert [r.messages[0].content for r in rows.records.values()] == ["server x"]
        assert [r.messages[0].content for r in user.memories.records.values()] == ["user x"]


async def test_concurrent_cold_reads_share_a_failure_and_the_next_read_tries_again(
        open_stm: OpenStm, tmp_path: Path) -> None:
    url = await _seeded(open_stm, tmp_path)
    async with open_stm(url) as stm:
        inner = stm.adapter.newest_server_memories
        started, release = asyncio.Event(), asyncio.Event()

        async def failing(*args: Any, **kwargs: Any) -> Any:
            started.set()
            await release.wait()
            raise StorageError("the connection was lost")

        stm.adapter.newest_server_memories = failing  # type: ignore[attr-defined]
        first = asyncio.ensure_future(stm.engine.server_memories("g1"))
        await started.wait()
        second = asyncio.ensure_future(stm.engine.server_memories("g1"))
        await asyncio.sleep(0)
        release.set()
        results = await asyncio.wait_for(
            asyncio.gather(first, second, return_exceptions=True), 10)
        assert [type(r) for r in results] == [StorageError, StorageError]
        assert all("connection was lost" in str(r) for r in results)
        stm.adapter.newest_server_memories = inner  # type: ignore[attr-defined]
        view = await stm.engine.server_memories("g1")
        assert [r.messages[0].content for r in view.records.values()] == ["server g1"]
