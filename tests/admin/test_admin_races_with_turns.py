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

from stm_core.models import HistoryMessage, PersonaResponse, Turn
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
