"""A row committed while its view loads reaches the view: the load read the
database before the write, so the write is replayed onto what it read, for
a server's view and a user's alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from tests.conftest import OpenStm

DM = Turn(user_id="u", channel_id="dm-u", persona_id="p")
GUILD = Turn(user_id="u", channel_id="c1", server_id="g", persona_id="p")


@pytest.mark.parametrize(("turn", "method"), [(GUILD, "load_server_memories"),
                                              (DM, "load_user_memories")],
                         ids=["server view", "user view"])
async def test_a_row_written_while_its_view_loads_is_in_the_view(
        open_stm: OpenStm, db_url: str, turn: Turn, method: str) -> None:
    async with open_stm(db_url) as stm:
        engine = stm.engine
        inner = getattr(stm.adapter, method)
        read, release = asyncio.Event(), asyncio.Event()

        async def slow(*args: Any, **kwargs: Any) -> Any:
            rows = await inner(*args, **kwargs)  # read before the write commits
            read.set()
            await release.wait()
            return rows

        setattr(stm.adapter, method, slow)
        load = (engine.server_memories("g") if turn.server_id is not None
                else engine.user_view("u"))
        loading = asyncio.ensure_future(load)
        await read.wait()
        await stm.record_turn(turn, [HistoryMessage(author_type="user", content="teal sky",
                                                    speaker_name="Ann", author_id="u")],
                              [PersonaResponse(content="ok", persona_name="Bot",
                                               persona_id="p")])
        release.set()
        loaded = await loading
        view = loaded if turn.server_id is not None else loaded.memories  # type: ignore[union-attr]
        setattr(stm.adapter, method, inner)
        key = next(iter(k for k in view.records if k.channel_id == turn.channel_id), None)
        assert key is not None, "the row written during the load is missing from the view"
        assert view.records[key].messages[0].content == "teal sky"
        # The view the engine keeps is that one: a warm read finds the row.
        again = (await engine.server_memories("g") if turn.server_id is not None
                 else (await engine.user_view("u")).memories)
        assert key in again.records
