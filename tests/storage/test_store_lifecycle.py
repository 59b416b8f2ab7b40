"""The async store's life outside ``async with``: ``await open_store(url)``
gives an open store, ``aclose()`` closes it once (idempotent), every call after
that raises ``StoreClosed``, and a store collected while open warns.
Closing while turns are in flight: those calls finish (they were admitted),
later ones raise ``StoreClosed``, and nothing hangs."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from stm_core import (
    ManualClock,
    Settings,
    StmError,
    StoreClosed,
    open_store,
    open_store_sync,
)
from stm_core.errors import ConfigurationError, UnknownDatabaseURL
from stm_core.plugins.storage import adapter_for_url, database_url
from stm_core.store import Stm
from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter
from tests.sync.test_sync_facade import LIVE, REPLY, said, turn

from .helpers import admin_on, row_locked

#: Far beyond what any step here takes: a wait that reaches it is a hang.
HANG_S = 20


async def opened(url: str, **kwargs: Any) -> Stm:
    kwargs.setdefault("load_entrypoints", False)
    kwargs.setdefault("settings", Settings())
    kwargs.setdefault("clock", ManualClock())
    return await open_store(url, **kwargs)


def every_call(stm: Stm) -> dict[str, Callable[[], Awaitable[object]]]:
    """One of each public call, as a host would make it."""
    return {
        "build_context": lambda: stm.build_context(turn()),
        "record_turn": lambda: stm.record_turn(turn(), said("late"), REPLY),
        "record_window": lambda: stm.record_window(turn(), said("late"), REPLY),
        "apply_tool_call": lambda: stm.apply_tool_call(turn(), {"summary": "late"}),
        "tool_schema": lambda: stm.tool_schema(turn()),
        "tool_available": lambda: stm.tool_available(turn()),
        "admin": lambda: stm.admin.server_params("g1"),
        "janitor": lambda: stm.janitor.run_once(),
    }


def resource_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


async def assert_refuses_every_call(stm: Stm) -> None:
    for call in every_call(stm).values():
        with pytest.raises(StoreClosed, match="closed"):
            await call()
    with pytest.raises(StoreClosed):
        async with stm:
            pass


async def test_an_awaited_store_is_open_until_aclose(db_url: str) -> None:
    stm = await opened(db_url)  # a host's setup_hook / lifespan start
    assert isinstance(stm, Stm) and not stm.closed and repr(stm) == "<Stm open>"
    assert (await stm.admin.set_server_params("g1", refresh_cadence=3)).refresh_cadence == 3
    await stm.record_turn(turn(), said("hello"), REPLY)
    await stm.aclose()  # and its shutdown
    assert stm.closed and repr(stm) == "<Stm closed>"
    await stm.aclose()  # idempotent
    await assert_refuses_every_call(stm)
    # What it wrote was committed: a store opened afterwards reads it.
    again = await opened(db_url)
    try:
        assert (await again.admin.server_params("g1")).refresh_cadence == 3
        view = await again.engine.server_memories("g1")
        assert view.records[LIVE].turns_since_refresh == 1
    finally:
        await again.aclose()


async def test_async_with_still_opens_and_closes(backend_url: str) -> None:
    async with open_store(backend_url, load_entrypoints=False, settings=Settings()) as stm:
        assert (await stm.build_context(turn())).memory_items == ()
    assert stm.closed
    await assert_refuses_every_call(stm)


async def test_an_awaited_store_closes_on_leaving_its_own_async_with() -> None:
    stm = await opened("memory://")
    with pytest.raises(RuntimeError, match="host bug"):
        async with stm as same:
            assert same is stm
            raise RuntimeError("host bug")
    assert stm.closed


async def test_one_open_store_call_opens_one_store() -> None:
    opening = open_store("memory://", load_entrypoints=False, settings=Settings())
    stm = await opening
    try:
        with pytest.raises(StmError, match="already awaited"):
            await opening
        with pytest.raises(StmError, match="already awaited"):
            async with opening:
                pass
    finally:
        await stm.aclose()


async def test_concurrent_closes_all_wait_for_the_one_close(db_url: str) -> None:
    stm = await opened(db_url)
    await stm.record_turn(turn(), said("hello"), REPLY)
    await asyncio.wait_for(asyncio.gather(*(stm.aclose() for _ in range(5))), HANG_S)
    assert stm.closed
    await assert_refuses_every_call(stm)


async def test_a_store_that_fails_to_open_raises_and_leaves_nothing_open(
        tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()  # a directory cannot be opened as a database
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception):  # noqa: B017 (the driver's own error)
            await opened(f"sqlite:///{tmp_path / 'dir.db'}")
        gc.collect()
    assert resource_warnings(caught) == []


# -- collected while open ----------------------------------------------------------------
@pytest.mark.parametrize("url", ["memory://", "sqlite"])
async def test_a_store_collected_while_open_warns(url: str, tmp_path: Path) -> None:
    stm = await opened(url if url != "sqlite" else f"sqlite:///{tmp_path / 'w.db'}")
    adapter = stm.adapter
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del stm
        gc.collect()
    assert resource_warnings(caught) == [
        "unclosed <Stm open>: await its aclose() or use it in async with"]
    await adapter.aclose()


async def test_closed_stores_and_the_sync_facade_never_warn(db_url: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stm = await opened(db_url)
        await stm.aclose()
        async with open_store(db_url, load_entrypoints=False, settings=Settings()) as other:
            await other.build_context(turn())
        half_built = Stm(adapter_for_url("memory://"), pm=other.pm)  # never opened
        del stm, other, half_built
        gc.collect()
        sync = await asyncio.to_thread(open_store_sync, db_url, load_entrypoints=False,
                                       settings=Settings())
        await asyncio.to_thread(sync.build_context, turn())
        await asyncio.to_thread(sync.close)
        del sync
        gc.collect()
    assert resource_warnings(caught) == []


# -- closing while turns are in flight ---------------------------------------------------
async def a_host_turn(stm: Stm, channel: str) -> None:
    t = turn(channel_id=channel)
    await stm.record_turn(t, said(f"hello in {channel}"), REPLY)
    await stm.build_context(t)


async def test_closing_under_many_tasks_ends_each_turn_or_refuses_it(db_url: str) -> None:
    """Eight tasks take turns on their own channels while two others close the
    store: each call either completes (and its write is in the database) or
    raises StoreClosed; nothing else is raised and nothing hangs."""
    stm = await opened(db_url)
    done: dict[str, int] = {}
    started = asyncio.Event()

    async def host(channel: str) -> BaseException:
        done[channel] = 0
        while True:
            try:
                await a_host_turn(stm, channel)
            except Exception as exc:
                return exc
            done[channel] += 1
            if sum(done.values()) >= 16:
                started.set()

    tasks = [asyncio.ensure_future(host(f"c{k}")) for k in range(8)]
    await asyncio.wait_for(started.wait(), HANG_S)
    await asyncio.wait_for(asyncio.gather(stm.aclose(), stm.aclose()), HANG_S)
    ended = await asyncio.wait_for(asyncio.gather(*tasks), HANG_S)
    assert all(isinstance(exc, StoreClosed) for exc in ended), ended
    again = await opened(db_url)
    try:
        view = await again.engine.server_memories("g1")
        counted = {key.channel_id: record.turns_since_refresh
                   for key, record in view.records.items()}
    finally:
        await again.aclose()
    # A turn whose record_turn returned was committed; one refused was not
    # (its build after the record may have been refused: a recorded turn too).
    for channel, turns in done.items():
        assert counted.get(channel, 0) in (turns, turns + 1), (channel, turns, counted)


async def test_close_lets_a_call_in_flight_finish_and_refuses_new_ones(
        db_url: str, tmp_path: Path) -> None:
    """A record_turn waits for a lock held elsewhere when the store is closed:
    the close waits for it, a call made meanwhile raises StoreClosed, and once
    the lock goes the write completes and the close returns."""
    stm = await opened(db_url)
    await stm.record_turn(turn(), said("first"), REPLY)  # the row exists (to lock it)
    if db_url.startswith("sqlite"):
        holder = sqlite3.connect(tmp_path / "stm.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        write = asyncio.ensure_future(stm.record_turn(turn(), said("second"), REPLY))
        await asyncio.sleep(0.3)  # the write waits for the lock
        await check_close_waits(stm, write, lambda: (holder.execute("COMMIT"), holder.close()))
    else:
        async with admin_on(db_url) as admin:
            gone = asyncio.Event()

            async def hold() -> None:
                async with row_locked(admin):
                    await gone.wait()

            holding = asyncio.ensure_future(hold())
            await asyncio.sleep(0.1)
            write = asyncio.ensure_future(stm.record_turn(turn(), said("second"), REPLY))
            await wait_for_a_lock_wait(admin)
            await check_close_waits(stm, write, gone.set)
            await holding
    again = await opened(db_url)
    try:
        assert (await again.engine.server_memories("g1")).records[LIVE].turns_since_refresh == 2
    finally:
        await again.aclose()


async def wait_for_a_lock_wait(admin: Any) -> None:
    for _ in range(1000):
        if await admin.fetchval("SELECT count(*) FROM pg_stat_activity "
                                "WHERE wait_event_type = 'Lock'"):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the write never waited for the row lock")


async def check_close_waits(stm: Stm, write: asyncio.Future[Any],
                            release_lock: Callable[[], object]) -> None:
    closing = asyncio.ensure_future(stm.aclose())
    await asyncio.sleep(0.2)
    assert not write.done() and not closing.done()  # the close waits for the write
    assert stm.closed
    with pytest.raises(StoreClosed):
        await stm.build_context(turn())  # a call made meanwhile is refused
    release_lock()
    result = await asyncio.wait_for(write, HANG_S)
    assert result.recorded
    await asyncio.wait_for(closing, HANG_S)


# -- a bare path is a SQLite file, for the API as for the command --------------------------
async def test_open_store_takes_a_bare_path_as_a_sqlite_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with open_store("bot.db", load_entrypoints=False, settings=Settings()) as stm:
        assert isinstance(stm.adapter, SqliteAdapter)
        await stm.record_turn(turn(), said("hello"), REPLY)
    assert (tmp_path / "bot.db").is_file()
    absolute = tmp_path / "data" / "abs.db"
    absolute.parent.mkdir()
    stm = await opened(str(absolute))
    await stm.aclose()
    assert absolute.is_file()
    # STM_DATABASE_URL too: the same rule.
    async with open_store(load_entrypoints=False,
                          settings=Settings(database_url="bot.db")) as same:
        assert (await same.engine.server_memories("g1")).records[LIVE].turns_since_refresh == 1


def test_the_command_and_the_api_share_the_bare_path_rule() -> None:
    from stm_core.cli.state import database_url as cli_url

    for typed in ("bot.db", "/var/lib/bot/stm.db", "data/stm.db", "sqlite:///x.db",
                  "postgresql://u@h/db", "memory://"):
        assert cli_url(typed) == database_url(typed)
    assert database_url("bot.db") == "sqlite+aiosqlite:///bot.db"
    assert database_url("/abs/bot.db") == "sqlite+aiosqlite:////abs/bot.db"
    assert cli_url(None) is None and cli_url("") is None


async def test_an_unknown_scheme_is_still_refused() -> None:
    with pytest.raises(UnknownDatabaseURL, match="mysql://"):
        await opened("mysql://u@h/db")
    with pytest.raises(ConfigurationError, match="no database URL"):
        await opened("", settings=Settings())


async def test_an_admin_call_in_flight_at_close_ends_with_its_answer_or_a_typed_error(
        sqlite_url: str, tmp_path: Path) -> None:
    """Admin calls are not counted as the turns are: a write of one that is
    waiting when the store closes still ends, with its answer or a StmError."""
    stm = await opened(sqlite_url)
    await stm.admin.set_server_params("g1", refresh_cadence=3)
    holder = sqlite3.connect(tmp_path / "stm.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    call = asyncio.ensure_future(stm.admin.set_server_params("g1", refresh_cadence=4))
    await asyncio.sleep(0.3)  # the write waits for the lock
    closing = asyncio.ensure_future(stm.aclose())
    await asyncio.sleep(0.2)
    holder.execute("COMMIT")
    holder.close()
    ended = await asyncio.wait_for(asyncio.gather(call, return_exceptions=True), HANG_S)
    await asyncio.wait_for(closing, HANG_S)
    [answer] = ended
    assert isinstance(answer, StmError) or answer.refresh_cadence == 4, answer
