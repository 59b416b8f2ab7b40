"""A row another process deletes and writes anew never leaves its old text
in a scope (issue: a cleared channel's words kept by a persona lineage's rows).

Store B keeps at most 10 rows per view. Row K (lineage L, rev 3) has 12
newer rows of another lineage above it, so B's view drops K and the rows B
keeps for lineage-L builds hold it. Another OS process clears K's channel,
then records a new turn there and one more: K is deleted and written anew,
its rev restarting at 1. B hears of it while its loop was busy, so the
delete and both writes reach it as one read of K (rev 2, below the rev 3
B held). B's next warm build of a lineage-L turn in another channel must be
what a freshly opened store builds: the new words, never the cleared ones.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm, open_store

from .support import child_env

SERVER, LINEAGE = "g", "L"
SETTINGS = Settings(cache_max_rows_per_view=10, max_other_channels=3)
#: The other process: clear K's channel, then two new turns there.
WRITER = """
import asyncio, sys
from stm_core._util.clock import ManualClock
from stm_core.store import open_store
from tests.reliability.test_scope_rewrites import SETTINGS, record

async def main():
    clock = ManualClock(int(sys.argv[2]))
    async with open_store(sys.argv[1], clock=clock, settings=SETTINGS,
                          load_entrypoints=False, listen_for_changes=False) as a:
        await a.admin.clear_channel("k")
        for text in ("new words", "newer words"):
            clock.advance(ms=1)
            await record(a, "k", LINEAGE_OF_K, text)

LINEAGE_OF_K = "L"
asyncio.run(main())
"""


def turn(channel: str, lineage: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=SERVER, persona_id=f"p-{lineage}",
                persona_lineage_id=lineage, bot_name="Bot", triggerer_name="Ann")


async def record(stm: Stm, channel: str, lineage: str, text: str) -> None:
    t = turn(channel, lineage)
    await stm.record_turn(
        t, [HistoryMessage(author_type="user", content=text, speaker_name="Ann",
                           author_id="u1")],
        [PersonaResponse(content=f"ok {text}", persona_name="Bot", persona_id=t.persona_id,
                         persona_lineage_id=lineage)])


async def _fresh(url: str, clock: ManualClock, probe: Turn) -> object:
    async with open_store(url, clock=ManualClock(clock.now_ms()), settings=SETTINGS,
                          load_entrypoints=False, listen_for_changes=False) as cold:
        return await cold.build_context(probe)


async def _cleared_row_rewritten_elsewhere(url: str, hear: Callable[[Stm, MemoryKey],
                                                                      Awaitable[None]]) -> None:
    clock = ManualClock()
    probe = turn("x", LINEAGE)
    async with open_store(url, clock=clock, settings=SETTINGS, load_entrypoints=False) as b:
        for text in ("old words", "older words", "oldest words"):  # K at rev 3
            clock.advance(ms=1)
            await record(b, "k", LINEAGE, text)
        for n in range(12):
            clock.advance(ms=1)
            await record(b, f"o{n}", "other", f"other {n}")
        before = await b.build_context(probe)
        assert "oldest words" in repr(before)  # K shows, from the lineage's rows
        view = await b.engine.server_memories(SERVER)
        key = MemoryKey.server(SERVER, "k", "p-L")
        assert key not in view.records and view.dropped_through is not None
        # The other process runs while this loop is blocked (busy).
        subprocess.run([sys.executable, "-c", WRITER, url, str(clock.now_ms() + 1)],
                       check=True, env=child_env(), timeout=120)
        clock.advance(ms=3)
        await hear(b, key)
        warm = await b.build_context(probe)
        cold = await _fresh(url, clock, probe)
    assert "newer words" in repr(cold) and "oldest words" not in repr(cold)
    assert warm == cold


async def test_a_scope_drops_a_row_another_process_cleared_and_rewrote_sqlite(
        sqlite_url: str) -> None:
    """SQLite has no change notices: B reads K again as its listener would
    have after hearing the three writes (once: they came together)."""
    async def hear(b: Stm, key: MemoryKey) -> None:
        await b.engine.reread(key)

    await _cleared_row_rewritten_elsewhere(sqlite_url, hear)


async def test_a_scope_drops_a_row_another_process_cleared_and_rewrote_postgres(
        pg_url: str) -> None:
    """PostgreSQL: B's listener hears the notices once its loop is free."""
    async def hear(b: Stm, key: MemoryKey) -> None:
        assert b.listener is not None
        refreshed = b.listener.stats.rows_refreshed
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while b.listener.stats.rows_refreshed == refreshed:
            assert loop.time() < deadline, "B never read the changed row again"
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # any other notice of the burst

    await _cleared_row_rewritten_elsewhere(pg_url, hear)
