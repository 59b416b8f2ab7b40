"""The PostgreSQL listening connection also runs the one-statement writes
that find it free.

A write's notice then comes back to the backend that sent it, so a lone
process's write wakes no second backend. What must still hold, on a real
database: the connection hears its own notices and everyone else's while it
writes; reads and multi-statement writes stay off it (a backend delivers no
notice while it runs a statement); calls and the keep-alive check take
turns on it; a listen URL keeps the listener to itself; a caller cancelled
mid-write does not cancel the write; a call that loses the connection
raises our error and the store listens (and lends) again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import (
    ChangeNotice,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    RevisionNote,
)
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage import notify
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url
from tests.conftest import postgres_base_url

from .helpers import NOW, adapter_on, admin_on, row_locked, started_waiting, turn

pytestmark = pytest.mark.postgres
SETTINGS = Settings(db_timeout_seconds=10.0)
ROW = MemoryKey.server("g1", "c1", None)


@asynccontextmanager
async def subscribed(pg_url: str, settings: Settings = SETTINGS
                     ) -> AsyncIterator[tuple[PostgresAdapter, notify.PgSubscription,
                                              list[ChangeNotice], list[str]]]:
    """A set-up adapter that listens: its subscription, the notices it heard
    and the losses it reported."""
    heard: list[ChangeNotice] = []
    lost: list[str] = []
    async with adapter_on(pg_url, factory=lambda: PostgresAdapter(
            parse_postgres_url(pg_url), settings)) as adapter:
        assert isinstance(adapter, PostgresAdapter)
        subscription = await adapter.subscribe(heard.append, lambda: lost.append("lost"))
        try:
            yield adapter, subscription, heard, lost
        finally:
            await subscription.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def one_turn(stm: Stm, channel: str, text: str) -> None:
    turn_ = Turn(user_id="u1", channel_id=channel, server_id="g1", persona_id="p",
                 channel_names={"c1": "one", "c2": "two"})
    await stm.record_turn(turn_, [HistoryMessage(author_type="user", content=text,
                                                 speaker_name="Ann", author_id="u1")],
                          [PersonaResponse(persona_id="p", persona_name="P", content="ok")])


async def test_a_lone_callers_writes_run_on_the_listening_connection(pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, heard, _lost), \
            admin_on(pg_url) as admin:
        assert subscription.delivers_notices is True
        before = subscription.calls
        records = await adapter.capture(turn("c1"))
        assert subscription.calls == before + 1
        assert (await adapter.get_memory(ROW)) == records[0]
        # Its own notice came back to it, with the write's result.
        await until(lambda: any(n.origin == adapter.instance_id for n in heard),
                    "the write's own notice")
        # The server ran the write on the listening backend itself.
        pid = subscription.backend_pid
        last = await admin.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", pid)
        assert "stm_memories" in last


async def test_a_listen_url_keeps_the_listener_to_itself(pg_url: str) -> None:
    base = postgres_base_url()
    assert base is not None
    separate = attrs.evolve(SETTINGS, listen_url=base)
    async with subscribed(pg_url, separate) as (adapter, subscription, heard, _lost):
        assert subscription.delivers_notices is True
        await adapter.capture(turn("c1"))
        assert subscription.calls == 0 and adapter._listening is None
        await until(lambda: any(n.origin == adapter.instance_id for n in heard),
                    "the write's own notice")


async def test_calls_and_the_keep_alive_check_take_turns(pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, _heard, lost):
        async def checks() -> None:
            for _ in range(40):
                await subscription.check(timeout_s=5.0)
                await asyncio.sleep(0)

        async def writes(channel: str) -> None:
            for _ in range(20):
                await adapter.capture(turn(channel))
                await adapter.get_memory(MemoryKey.server("g1", channel, None))

        await asyncio.gather(checks(), checks(), *(writes(f"c{i}") for i in range(4)))
        assert subscription.calls > 0 and lost == []
        record = await adapter.get_memory(MemoryKey.server("g1", "c0", None))
        assert record is not None and record.turns_since_refresh == 20


async def test_other_processes_notices_reach_a_listener_that_writes(pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, heard, _lost), \
            adapter_on(pg_url, factory=lambda: PostgresAdapter(
                parse_postgres_url(pg_url), SETTINGS)) as other:
        assert isinstance(other, PostgresAdapter)

        async def mine() -> None:
            for i in range(30):
                await adapter.capture(turn(f"mine{i}"))

        async def theirs() -> None:
            for i in range(30):
                await other.capture(turn(f"theirs{i}"))

        await asyncio.gather(mine(), theirs())
        await until(lambda: sum(1 for n in heard if n.origin == other.instance_id) == 30,
                    "every notice of the other adapter")
        assert subscription.calls >= 30
        channels = {k.channel_id for n in heard if n.origin == other.instance_id
                    for k in n.keys}
        assert channels == {f"theirs{i}" for i in range(30)}


async def test_a_cancelled_caller_does_not_cancel_its_write_on_the_listener(
        pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, _heard, lost), \
            admin_on(pg_url) as admin:
        await adapter.capture(turn("c1"))
        reports: list[list[MemoryRecord] | None] = []
        async with row_locked(admin):
            caller = asyncio.ensure_future(adapter.capture_reported(turn("c1"), reports.append))
            pid = subscription.backend_pid
            await until(lambda: subscription.in_use, "the write took the listener")
            await started_waiting(admin, pid)
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            assert reports == []
        await until(lambda: len(reports) == 1, "the write's report")
        assert reports[0] is not None and reports[0][0].turns_since_refresh == 2
        # The connection is lent again, and it still listens.
        assert (await adapter.get_memory(ROW)) == reports[0][0]
        await subscription.check(timeout_s=5.0)
        assert lost == []


async def test_a_call_that_loses_the_listener_raises_our_error_and_listening_resumes(
        pg_url: str) -> None:
    settings = attrs.evolve(SETTINGS, listener_check_seconds=0.2)
    async with open_store(pg_url, settings=settings, clock=ManualClock(),
                          load_entrypoints=False) as stm, admin_on(pg_url) as admin:
        listener = stm.listener
        assert listener is not None
        await one_turn(stm, "c1", "before")
        first: Any = listener._subscription
        assert first is not None and first.calls > 0
        await admin.execute("SELECT pg_terminate_backend($1)", first.backend_pid)
        # A call in the gap either goes elsewhere or fails with our error.
        for i in range(5):
            with suppress(StorageError):
                await one_turn(stm, "c2", f"gap {i}")
        await until(lambda: listener.stats.connects >= 2, "listening again")
        second: Any = listener._subscription
        assert second is not first
        await one_turn(stm, "c1", "after")
        assert second.calls > 0
        record = await stm.adapter.get_memory(MemoryKey.server("g1", "c1", "p"))
        assert record is not None and record.messages[-2].content == "after"


async def test_a_call_without_an_answer_suspends_lending_until_a_check_passes(
        pg_url: str) -> None:
    impatient = attrs.evolve(SETTINGS, db_timeout_seconds=0.5)
    async with subscribed(pg_url, impatient) as (adapter, subscription, _heard, lost), \
            admin_on(pg_url) as admin:
        await adapter.capture(turn("c1"))
        async with row_locked(admin):
            with pytest.raises(StorageError, match=r"no answer within 0\.5 s"):
                await adapter.capture(turn("c1"))
        # The next writes go to the pool: none queues behind the cancellation.
        lent = subscription.calls
        await adapter.capture(turn("c2"))
        assert subscription.calls == lent
        await subscription.check(timeout_s=5.0)
        await adapter.capture(turn("c2"))
        assert subscription.calls == lent + 1
        record = await adapter.get_memory(ROW)
        # A write without an answer may have committed (the cancel races the lock).
        assert record is not None and record.turns_since_refresh in (1, 2) and lost == []


async def test_reads_and_multi_statement_writes_stay_off_the_listener(pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, _heard, _lost):
        await adapter.capture(turn("c1"))
        lent = subscription.calls
        assert await adapter.get_memory(ROW) is not None
        assert await adapter.load_server_memories("g1", updated_since_ms=0)
        noted = [MemoryWrite(key=ROW, now_ms=NOW, set_summary=True, summary="s",
                             revision=RevisionNote(author="admin"))]
        written = await adapter.write_memory(noted)  # the row and its revision, one transaction
        assert written[0].summary == "s" and subscription.calls == lent
        await adapter.capture(turn("c1"))
        assert subscription.calls == lent + 1


async def test_a_write_killed_mid_statement_on_the_listener_writes_nothing(
        pg_url: str) -> None:
    async with subscribed(pg_url) as (adapter, subscription, _heard, lost), \
            admin_on(pg_url) as admin:
        first = await adapter.capture(turn("c1", texts=("before",)))
        reports: list[list[MemoryRecord] | None] = []
        pid = subscription.backend_pid
        async with row_locked(admin):
            write = asyncio.ensure_future(
                adapter.capture_reported(turn("c1", texts=("killed",)), reports.append))
            await until(lambda: subscription.in_use, "the write took the listener")
            await started_waiting(admin, pid)
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            with pytest.raises(StorageError, match="write failed"):
                await write
        assert reports == [None]  # the store drops what it cannot know
        await until(lambda: lost == ["lost"], "the lost listener reported")
        # Both rows of the turn as before: the statement left nothing behind.
        for key, before in zip((ROW, MemoryKey.user("u1", "c1", None, "g1")), first,
                               strict=True):
            record = await adapter.get_memory(key)
            assert record == before and record.messages[-1].content == "before"
        assert subscription.take() is None  # a dead connection is never lent
