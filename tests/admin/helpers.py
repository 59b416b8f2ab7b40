"""Seeding helpers for admin tests: real writes through the store's API."""

from __future__ import annotations

from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryKey, MemoryRecord, MemoryWrite
from stm_core.store import Stm


async def seed_summary(stm: Stm, key: MemoryKey, summary: str, *,
                       messages: int = 0, counter: int = 0) -> MemoryRecord:
    now = stm.clock.now_ms()
    if messages or counter:
        crude = tuple(CrudeMessage(role="user", content=f"line {i}", speaker_name="Alice",
                                   timestamp_ms=now) for i in range(messages))
        await stm.engine.capture([CaptureWrite(key=key, messages=crude, now_ms=now,
                                        counter_increment=counter)])
    [record] = await stm.engine.write_memory([MemoryWrite(key=key, now_ms=now, set_summary=True,
                                                   summary=summary)])
    return record


async def seed_categories(stm: Stm, key: MemoryKey, values: dict[str, str]) -> MemoryRecord:
    [record] = await stm.engine.write_memory([MemoryWrite(key=key, now_ms=stm.clock.now_ms(),
                                                   set_categories=True, categories=values)])
    return record
