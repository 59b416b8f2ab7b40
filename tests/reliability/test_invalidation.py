"""What each kind of write tells the other stores on one PostgreSQL database,
and the safety expiry of cached views.

Two stores in one test process stand for two bot processes (each has its own
cache, pool and listening connection); ``test_multiprocess`` does the same
with real processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm, open_store

from .support import cache_problems

SERVER = "g"
pytestmark = pytest.mark.postgres


def turn(channel: str = "c1", user: str = "u1", server: str | None = SERVER) -> Turn:
    return Turn(user_id=user, channel_id=channel, server_id=server, has_tools=True)


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.005)


@asynccontextmanager
async def two_stores(url: str, **settings: Any) -> AsyncIterator[tuple[Stm, Stm]]:
    clock = ManualClock()
    chosen = attrs.evolve(Settings(), **settings)
    async with open_store(url, clock=clock, settings=chosen, load_entrypoints=False) as a, \
            open_store(url, clock=clock, settings=chosen, load_entrypoints=False) as b:
        assert a.listener is not None and b.listener is not None
        yield a, b


async def shows(stm: Stm, text: str, t: Turn | None = None) -> bool:
    ctx = await stm.build_context(t or turn())
    return text in repr(ctx)


async def test_memory_writes_settings_and_deletes_reach_the_other_store(pg_url: str) -> None:
    async with two_stores(pg_url) as (a, b):
        assert not await shows(b, "from A")  # B's views are now cached
        other = turn("c2")
        assert (await a.apply_tool_call(other, {"summary": "from A"})).ok
        await eventually(lambda: shows(b, "from A"))

        await a.admin.set_server_params(SERVER, nudge_injection_depth=7)
        await eventually(lambda: _depth(b, 7))

        await a.admin.set_private_channels(SERVER, channel_ids=["c2"])
        await eventually(lambda: _not(shows(b, "from A")))
        await a.admin.set_private_channels(SERVER, channel_ids=[])
        await eventually(lambda: shows(b, "from A"))

        await a.admin.clear_channel("c2")
        await eventually(lambda: _not(shows(b, "from A")))

        await a.admin.set_user_opt_in("u1", opt_in=True)
        await eventually(lambda: _opt_in(b, "u1"))
        assert await cache_problems(b) == []
        # A skips its own notices: it already holds what it wrote.
        assert a.listener is not None and a.listener.stats.own_notices >= 5
        assert a.listener.stats.rows_refreshed == 0


async def _depth(stm: Stm, depth: int) -> bool:
    return (await stm.build_context(turn())).nudge_injection_depth == depth


async def _opt_in(stm: Stm, user: str) -> bool:
    return (await stm.engine.user_view(user)).prefs.crossserver_opt_in


async def _not(check: Awaitable[bool]) -> bool:
    return not await check


async def test_a_row_deleted_and_written_again_is_not_hidden_by_its_old_rev(pg_url: str) -> None:
    async with two_stores(pg_url) as (a, b):
        key = MemoryKey.server(SERVER, "c2", None)
        now = a.clock.now_ms()
        for n in range(5):  # rev 5 in both caches
            await a.engine.write_memory([MemoryWrite(key=key, now_ms=now, set_summary=True,
                                              summary=f"old {n}")])
        await eventually(lambda: shows(b, "old 4"))
        await a.admin.clear_channel("c2")
        await a.engine.write_memory([MemoryWrite(key=key, now_ms=now, set_summary=True,
                                          summary="new life")])  # rev 1 again
        await eventually(lambda: shows(b, "new life"))
        assert await cache_problems(b) == []


async def test_a_notice_too_long_to_send_drops_the_whole_cache(pg_url: str) -> None:
    async with two_stores(pg_url) as (a, b):
        now = a.clock.now_ms()
        many = [MemoryWrite(key=MemoryKey.server(SERVER, "wide", f"persona-{i:03d}-" + "x" * 60),
                            now_ms=now, set_summary=True, summary="wide")
                for i in range(150)]
        await a.engine.write_memory(many)
        await b.build_context(turn())
        flushes = b.cache.stats.flushes
        await a.admin.clear_channel("wide")  # 150 keys: more than a notice can carry
        await eventually(lambda: _flushed(b, flushes))
        assert await cache_problems(b) == []


async def _flushed(stm: Stm, before: int) -> bool:
    return stm.cache.stats.flushes > before


async def test_the_janitor_purge_reaches_the_other_store(pg_url: str) -> None:
    async with two_stores(pg_url) as (a, b):
        key = MemoryKey.server(SERVER, "old", None)
        await a.engine.write_memory([MemoryWrite(key=key, now_ms=a.clock.now_ms(), set_summary=True,
                                          summary="ancient")])
        assert await b.engine.live_record(key) is not None
        assert isinstance(a.clock, ManualClock)
        a.clock.advance(days=91)
        assert await a.janitor.run_once() == 1
        await eventually(lambda: _gone(b, key))


async def _gone(stm: Stm, key: MemoryKey) -> bool:
    view = stm.cache.servers.peek(key.server_id)
    return view is None or key not in view.records


async def test_a_turn_recorded_in_one_store_counts_in_the_other(pg_url: str) -> None:
    async with two_stores(pg_url) as (a, b):
        t = Turn(user_id="u1", channel_id="c1", server_id=SERVER, persona_id="p")
        assert await b.engine.live_record(MemoryKey.server(SERVER, "c1", "p")) is None
        for _ in range(3):
            await a.record_turn(t, [HistoryMessage(author_type="user", content="hi")],
                                [PersonaResponse(persona_id="p", persona_name="P",
                                                 content="yo")])
        await eventually(lambda: _counter(b, 3))


async def _counter(stm: Stm, n: int) -> bool:
    record = await stm.engine.live_record(MemoryKey.server(SERVER, "c1", "p"))
    return record is not None and record.turns_since_refresh == n


async def test_cached_views_expire_after_the_maximum_age(sqlite_url: str) -> None:
    """The safety net, shown on SQLite where nothing announces writes: a view
    older than ``cache_max_age_seconds`` is loaded again."""
    clock = ManualClock()
    settings = Settings(cache_max_age_seconds=60)
    async with open_store(sqlite_url, clock=clock, settings=settings,
                          load_entrypoints=False) as a, \
            open_store(sqlite_url, clock=clock, settings=settings,
                       load_entrypoints=False) as b:
        assert b.listener is None
        await b.build_context(turn())
        assert (await a.apply_tool_call(turn("c2"), {"summary": "unannounced"})).ok
        assert not await shows(b, "unannounced")  # within the age: from the cache
        clock.advance(seconds=61)
        assert await shows(b, "unannounced")
        assert b.cache.servers.expired >= 1


async def test_one_process_without_a_maximum_age_never_expires(sqlite_url: str) -> None:
    clock = ManualClock()
    async with open_store(sqlite_url, clock=clock, load_entrypoints=False) as stm:
        await stm.build_context(turn())
        loads = stm.cache.stats.misses
        clock.advance(hours=5)
        await stm.build_context(turn())
        assert stm.cache.stats.misses == loads


async def test_a_store_that_does_not_listen_still_announces_its_writes(pg_url: str) -> None:
    # What the `stm` command does: a short-lived store with no listener whose
    # admin edits must still reach the running bots.
    clock = ManualClock()
    async with open_store(pg_url, clock=clock, settings=Settings(),
                          load_entrypoints=False) as bot, \
            open_store(pg_url, clock=clock, settings=Settings(), load_entrypoints=False,
                       listen_for_changes=False) as command:
        assert bot.listener is not None and command.listener is None
        assert (await bot.build_context(turn())).nudge_injection_depth == 2  # cached
        await command.admin.set_server_params(SERVER, nudge_injection_depth=9)
        await eventually(lambda: _depth(bot, 9))
