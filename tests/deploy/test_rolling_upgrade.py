"""A rolling upgrade on one PostgreSQL database: the first process of the next
release migrates while processes of this release keep writing, and a process
of this release restarted afterwards opens the newer schema (the
compatibility window) instead of being refused.

"Next release" is this code plus a test-only expand step (a new nullable
column, as the contract in the migrations module requires). Every process
records turns on one shared persona row; its counter must count each turn
exactly once across releases, and every tool write must persist.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.plugins import create_plugin_manager
from stm_core.settings import Settings
from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import Stm
from stm_plugins.sqlalchemy_storage import migrations as mig
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter
from stm_plugins.sqlalchemy_storage.urls import parse_postgres_url

pytestmark = pytest.mark.postgres
SERVER, CHANNEL = "g", "busy"
NEXT = (*mig.MIGRATIONS, mig.MigrationStep(
    version=mig.SCHEMA_VERSION + 1, description="memories get a mood (test-only expand step)",
    statements=lambda dialect: ["ALTER TABLE stm_memories ADD COLUMN mood TEXT"]))


@asynccontextmanager
async def release(url: str, steps: Sequence[mig.MigrationStep]) -> AsyncIterator[Stm]:
    """A store running the code of the release whose schema steps are ``steps``."""
    settings = Settings()
    adapter = PostgresAdapter(parse_postgres_url(url), settings, migrations=steps)
    stm = Stm(adapter, pm=create_plugin_manager(load_entrypoints=False), settings=settings)
    try:
        await stm.setup()
        await stm.start_listening()
        yield stm
    finally:
        await stm.aclose()


async def one_turn(stm: Stm, tag: str) -> tuple[int, bool]:
    history = [HistoryMessage(author_type="user", content=f"hi {tag}", speaker_name="u")]
    shared = Turn(user_id=f"u-{tag}", channel_id=CHANNEL, server_id=SERVER,
                  persona_id="shared", has_tools=True)
    recorded = await stm.record_turn(shared, history, [PersonaResponse(
        persona_id="shared", persona_name="Shared", content=f"re {tag}")])
    own = Turn(user_id=f"u-{tag}", channel_id=CHANNEL, server_id=SERVER,
               persona_id=f"w-{tag}", has_tools=True)
    result = await stm.apply_tool_call(own, {"summary": f"note {tag}"})
    return recorded.counters["shared"], result.ok


async def keep_writing(stm: Stm, name: str, n: int) -> list[tuple[int, bool]]:
    out = []
    for i in range(n):  # a bot's steady trickle, several turns in flight
        out += await asyncio.gather(*(one_turn(stm, f"{name}-{i}-{j}") for j in range(4)))
    return out


async def test_this_release_keeps_writing_while_the_next_migrates_and_after(
        pg_url: str) -> None:
    async with release(pg_url, mig.MIGRATIONS) as old:
        assert old.schema_status is not None
        assert old.schema_status.to_version == mig.SCHEMA_VERSION
        old_writes = asyncio.create_task(keep_writing(old, "old", 15))
        await asyncio.sleep(0.05)  # the old process is mid-stream when the new one starts
        async with release(pg_url, NEXT) as new:
            assert new.schema_status is not None
            assert (new.schema_status.from_version, new.schema_status.to_version) == (
                mig.SCHEMA_VERSION, mig.SCHEMA_VERSION + 1)
            new_results = await keep_writing(new, "new", 15)
            # A process of this release restarted mid-rollout: the schema is one
            # ahead, within the window, so it opens and writes.
            async with release(pg_url, mig.MIGRATIONS) as restarted:
                assert restarted.schema_status is not None
                assert restarted.schema_status.to_version == mig.SCHEMA_VERSION + 1
                restarted_results = await keep_writing(restarted, "restarted", 5)
            old_results = await old_writes
            shared = await new.adapter.get_memory(MemoryKey.server(SERVER, CHANNEL, "shared"))
            rows = await new.adapter.list_memories(MemoryFilter(channel_id=CHANNEL))

    results = old_results + new_results + restarted_results
    assert all(ok for _c, ok in results), "a tool write failed"
    counters = sorted(c for c, _ok in results)
    assert counters == list(range(1, len(results) + 1)), "a counter was lost or doubled"
    assert shared is not None and shared.turns_since_refresh == len(results)
    notes = {r.summary for r in rows if r.key.persona_id.startswith("w-")}
    assert len(notes) == len(results), f"{len(results) - len(notes)} tool writes lost"
