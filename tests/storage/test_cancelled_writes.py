"""A caller cancelled mid-write must not leave the cache behind the database."""

from __future__ import annotations

import asyncio

from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryKey
from tests.conftest import OpenStm


async def test_cancelled_capture_still_reaches_the_cache(open_stm: OpenStm,
                                                         backend_url: str) -> None:
    async with open_stm(backend_url) as stm:
        key = MemoryKey.server("g1", "c1", "p1")
        view = await stm.server_memories("g1")  # a warm view the write must reach
        message = CrudeMessage(role="user", content="hi", speaker_name="Ann",
                               timestamp_ms=stm.clock.now_ms())
        write = CaptureWrite(key=key, messages=(message,), now_ms=stm.clock.now_ms(),
                             counter_increment=1)
        await stm.capture([write])  # the row exists with counter 1

        caller = asyncio.create_task(stm.capture([write]))
        await asyncio.sleep(0)  # the write is queued or running
        caller.cancel()
        try:
            await caller
        except asyncio.CancelledError:
            pass
        else:
            # The in-memory adapter never waits: its write ends before the
            # cancellation can reach the caller. A database write always waits.
            assert backend_url == "memory://"

        for _ in range(200):
            stored = await stm.adapter.get_memory(key)
            cached = view.records.get(key)
            if stored is not None and cached == stored:
                break
            await asyncio.sleep(0.01)
        assert stored is not None
        assert stored.turns_since_refresh in (1, 2)
        assert view.records[key] == stored


async def test_many_writers_cancelled_at_every_point_leave_cache_equal_to_database(
        open_stm: OpenStm, backend_url: str) -> None:
    async with open_stm(backend_url) as stm:
        keys = [MemoryKey.server("g1", f"c{n}", "p1") for n in range(12)]
        view = await stm.server_memories("g1")

        def write(key: MemoryKey) -> CaptureWrite:
            message = CrudeMessage(role="user", content=f"hi {key.channel_id}",
                                   speaker_name="Ann", timestamp_ms=stm.clock.now_ms())
            return CaptureWrite(key=key, messages=(message,), now_ms=stm.clock.now_ms(),
                                counter_increment=1)

        for round_ in range(4):
            callers = [asyncio.create_task(stm.capture([write(k)])) for k in keys]
            for _ in range(round_):  # cancel after 0..3 turns of the loop
                await asyncio.sleep(0)
            for caller in callers[::2]:
                caller.cancel()
            await asyncio.gather(*callers, return_exceptions=True)

        for _ in range(200):
            stored = [await stm.adapter.get_memory(k) for k in keys]
            if all(s is not None and view.records.get(s.key) == s for s in stored):
                break
            await asyncio.sleep(0.01)
        for key, row in zip(keys, stored, strict=True):
            assert row is not None, key
            assert view.records[key] == row
            # Odd keys were never cancelled: all four writes counted.
            if int(key.channel_id[1:]) % 2:
                assert row.turns_since_refresh == 4
