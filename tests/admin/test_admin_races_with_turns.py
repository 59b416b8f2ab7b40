"""Admin calls that delete rows, gathered with a turn on the same server.

One process, one database. The admin call goes first in the ``gather``, so
its delete usually commits before the turn's write, while its cache update
may run after the turn's. Afterwards the long-lived store must answer exactly as a
store freshly opened on the same database at the same clock time: the turn's
row stays visible from the other channel (an older delete never drops a newer
row, nor marks it absent).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryFilter, MemoryKey, MemoryRecord
from stm_core.store import Stm
from tests.conftest import OpenStm

G = "s1"


def turn(channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=G, has_tools=True)


async def record(stm: Stm, channel: str, text: str) -> None:
    await stm.record_turn(turn(channel),
                          [HistoryMessage(author_type="user", content=text, speaker_name="Ann")],
                          [PersonaResponse(persona_name="Bot", content=f"re: {text}")])


async def import_other_categories(stm: Stm) -> dict[str, Any]:
    document = await stm.admin.export_config(G)
    document["categories"] = [{"label": "plot", "description": "the story so far"}]
    return await stm.admin.import_config(G, document)


ADMIN_CALLS: dict[str, Callable[[Stm], Awaitable[Any]]] = {
    "reset_categories": lambda stm: stm.admin.reset_categories(G),
    "set_categories": lambda stm: stm.admin.set_categories(G, "summary: what happened"),
    "import_config": import_other_categories,
    "clear_channel": lambda stm: stm.admin.clear_channel("c-new"),
}


@pytest.mark.parametrize("call", sorted(ADMIN_CALLS))
async def test_a_turn_gathered_after_an_admin_delete_stays_visible(
        open_stm: OpenStm, db_url: str, call: str) -> None:
    async with open_stm(db_url) as stm:
        await record(stm, "c-old", "earlier")
        await record(stm, "c-new", "before")
        assert (await stm.build_context(turn("c-old"))).memory_items  # warm views
        await asyncio.gather(ADMIN_CALLS[call](stm), record(stm, "c-new", "during"))
        warm = await stm.build_context(turn("c-old"))
        async with open_stm(db_url, listen_for_changes=False) as fresh:
            cold = await fresh.build_context(turn("c-old"))
        # Whichever committed last, the warm store shows what the database holds.
        assert warm == cold


async def same_as_fresh(stm: Stm, open_stm: OpenStm, url: str, *turns: Turn) -> None:
    """The long-lived store answers every turn as a fresh store on the database."""
    warm = [await stm.build_context(t) for t in turns]
    async with open_stm(url, listen_for_changes=False) as fresh:
        cold = [await fresh.build_context(t) for t in turns]
    assert warm == cold


def dm_turn(user_id: str = "u1") -> Turn:
    return Turn(user_id=user_id, channel_id=f"dm-{user_id}", has_tools=True)


async def record_dm(stm: Stm, text: str) -> None:
    await stm.record_turn(dm_turn(),
                          [HistoryMessage(author_type="user", content=text, speaker_name="Ann",
                                          author_id="u1")],
                          [PersonaResponse(persona_name="Bot", content=f"re: {text}")])


async def test_a_janitor_run_gathered_with_turns(open_stm: OpenStm, db_url: str,
                                                 clock: ManualClock) -> None:
    settings = Settings(janitor_retention_days=1, janitor_pause_ms=0)
    async with open_stm(db_url, settings=settings) as stm:
        await record(stm, "c-old", "long ago")
        await record(stm, "c-new", "long ago")
        clock.advance(days=2)
        await stm.build_context(turn("c-old"))
        await asyncio.gather(stm.janitor.run_once(), record(stm, "c-old", "now"),
                             record(stm, "c-new", "now"))
        await same_as_fresh(stm, open_stm, db_url, turn("c-old"), turn("c-new"))


async def test_forget_user_gathered_with_their_turns(open_stm: OpenStm, db_url: str) -> None:
    async with open_stm(db_url) as stm:
        await record_dm(stm, "before")
        await record(stm, "c-new", "before")
        await stm.build_context(dm_turn())
        await asyncio.gather(stm.admin.forget_user("u1"), record_dm(stm, "during"),
                             record(stm, "c-new", "during"))
        await same_as_fresh(stm, open_stm, db_url, dm_turn(), turn("c-old"))


@pytest.mark.parametrize("restore", ["undo", "restore"])
async def test_undo_and_restore_gathered_with_a_clear(open_stm: OpenStm, db_url: str,
                                                      restore: str) -> None:
    async with open_stm(db_url) as stm:
        for text in ("first", "second"):
            await stm.admin.edit_memory(channel_id="c-new", server_id=G, summary=text)
        await stm.build_context(turn("c-old"))
        history = await stm.admin.memory_history(channel_id="c-new", server_id=G)
        back = (stm.admin.undo_memory(channel_id="c-new", server_id=G) if restore == "undo"
                else stm.admin.restore_memory(channel_id="c-new", server_id=G,
                                              rev=history.revisions[-1].rev))
        outcomes = await asyncio.gather(stm.admin.clear_channel("c-new"), back,
                                        return_exceptions=True)
        # Cleared first, the memory has no revision left to go back to.
        assert not isinstance(outcomes[1], Exception) or isinstance(outcomes[1], ValidationError)
        await same_as_fresh(stm, open_stm, db_url, turn("c-old"), turn("c-new"))


async def test_a_cold_load_gathered_with_deletes_and_turns(open_stm: OpenStm,
                                                           db_url: str) -> None:
    """Changes mirrored while a view loads are replayed onto it, versioned."""
    async with open_stm(db_url) as stm:
        await record(stm, "c-new", "before")
        await record_dm(stm, "before")
    async with open_stm(db_url) as stm:  # cold: every view loads now
        await asyncio.gather(stm.build_context(turn("c-old")), stm.build_context(dm_turn()),
                             stm.admin.clear_channel("c-new"), stm.admin.clear_user("u1"),
                             record(stm, "c-new", "during"), record_dm(stm, "during"))
        await same_as_fresh(stm, open_stm, db_url, dm_turn(), turn("c-old"))


async def test_a_notice_reread_that_found_nothing_keeps_a_row_written_meanwhile(
        open_stm: OpenStm, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process deleted a row; while this one reads it again after the
    notice, a local turn writes it anew. The stale "no row" must not hide it."""
    async with open_stm(sqlite_url) as stm:
        await record(stm, "c-new", "before")
        await stm.build_context(turn("c-old"))
        key = MemoryKey.server(G, "c-new", None)
        await stm.adapter.delete_memories(MemoryFilter(channel_id="c-new"))  # "elsewhere"
        real_get = stm.adapter.get_memory
        written = asyncio.Event()

        async def stale_get(wanted: MemoryKey) -> MemoryRecord | None:
            found = await real_get(wanted)
            await written.wait()  # answers with what it read before the local write
            return found

        monkeypatch.setattr(stm.adapter, "get_memory", stale_get)

        async def local_turn() -> None:
            await record(stm, "c-new", "during")
            written.set()

        await asyncio.gather(stm.engine.reread(key), local_turn())
        monkeypatch.undo()
        await same_as_fresh(stm, open_stm, sqlite_url, turn("c-old"))
