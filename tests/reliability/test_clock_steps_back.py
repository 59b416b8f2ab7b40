"""A clock that steps back (NTP does) leaves a long-lived store answering as
a freshly opened one: a view remembers the window it loaded, and a build
whose window starts earlier reloads it.

A row just past its TTL is outside the window a view loads; 2 ms later on a
clock stepped back, the row has not expired, and a fresh store shows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stm_core._util.clock import ManualClock
from stm_core.settings import Settings
from stm_core.store import open_store
from tests.pipeline.support import make_turn, server_key, user_key, write

SETTINGS = Settings(ttl_hours=1.0, summary_ttl_hours=2.0)


@pytest.mark.parametrize("place", ["server", "dm"])
@pytest.mark.parametrize("back_ms", [1, 2, 60_000])
async def test_a_row_back_inside_its_ttl_shows_as_in_a_fresh_store(
        tmp_path: Path, place: str, back_ms: int) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"
    clock = ManualClock()
    written = clock.now_ms()
    key = (server_key("general") if place == "server"
           else user_key("dm-general", user="alice"))
    turn = (make_turn() if place == "server"
            else make_turn(server_id=None, channel_id="dm-quest"))
    async with open_store(url, clock=clock, settings=SETTINGS, load_entrypoints=False,
                          listen_for_changes=False) as warm:
        await write(warm, key, summary="the river plan")
        clock.set(written + SETTINGS.summary_ttl_ms + 1)  # just expired
        assert "river plan" not in repr(await warm.build_context(turn))  # views cached
        clock.set(clock.now_ms() - back_ms)  # the clock steps back
        warm_answer = await warm.build_context(turn)
        async with open_store(url, clock=ManualClock(clock.now_ms()), settings=SETTINGS,
                              load_entrypoints=False, listen_for_changes=False) as cold:
            cold_answer = await cold.build_context(turn)
        assert ("river plan" in repr(cold_answer)) == (back_ms >= 1)
        assert warm_answer == cold_answer
        clock.set(written + SETTINGS.summary_ttl_ms + 1)  # and forward again
        assert "river plan" not in repr(await warm.build_context(turn))
