"""A caller cancelled mid-write must not leave the cache behind the database."""

from __future__ import annotations

import asyncio

import pytest

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
