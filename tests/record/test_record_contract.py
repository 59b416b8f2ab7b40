"""record_turn's contract: the history is the whole window the model saw.

``record_window`` is the name that says so; ``record_turn`` keeps working as
the same call. A reply without a lineage takes the turn's.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.models import PersonaResponse
from stm_core.store import Stm, open_store

from .test_record_turn import SERVER_KEY, USER_KEY, guild_turn, reply, row, user


async def stored(stm: Stm) -> list[str]:
    return [m.content for m in (await row(stm, SERVER_KEY)).messages]


async def test_record_window_replaces_the_lines_with_the_window(stm: Stm) -> None:
    await stm.record_window(guild_turn(), [user("one")], [reply("first")])
    await stm.record_window(guild_turn(), [user("one"), user("first", "Tomori"), user("two")],
                            [reply("second")])
    assert await stored(stm) == ["one", "first", "two", "second"]
    # A window that holds only the new message keeps only that: it is a window.
    result = await stm.record_window(guild_turn(), [user("three")], [reply("third")])
    assert await stored(stm) == ["three", "third"]
    assert result.counters == {"p1": 3}


async def test_record_turn_is_the_same_call(stm: Stm) -> None:
    window = [user("a"), user("b")]
    first = await stm.record_turn(guild_turn(), window, [reply("c")])
    by_record_turn = await stored(stm)
    second = await stm.record_window(guild_turn(), window, [reply("c")])
    assert await stored(stm) == by_record_turn == ["a", "b", "c"]
    assert (first.counters, second.counters) == ({"p1": 1}, {"p1": 2})


async def test_a_reply_without_lineage_takes_the_turns(stm: Stm) -> None:
    response = PersonaResponse(content="hello", persona_name="Tomori", persona_id="p1")
    await stm.record_window(guild_turn(persona_lineage_id="L9"), [user("hi")], [response])
    assert (await row(stm, SERVER_KEY)).persona_lineage_id == "L9"
    assert (await row(stm, USER_KEY)).persona_lineage_id == "L9"
    # Readers of lineage L9 see the row from another channel.
    ctx = await stm.build_context(guild_turn(persona_lineage_id="L9", channel_id="c2"))
    assert [i.kind for i in ctx.memory_items] == ["other_channels"]
    assert "hello" in ctx.memory_items[0].text


async def test_a_reply_with_its_own_lineage_keeps_it(stm: Stm) -> None:
    await stm.record_window(guild_turn(persona_lineage_id="L9"), [user("hi")],
                            [reply("yo", lineage="L1")])
    assert (await row(stm, SERVER_KEY)).persona_lineage_id == "L1"


async def test_concurrent_windows_count_every_turn(stm: Stm) -> None:
    await asyncio.gather(*(stm.record_window(guild_turn(), [user(f"m{i}")], [reply(f"r{i}")])
                           for i in range(12)))
    live = await row(stm, SERVER_KEY)
    assert live.turns_since_refresh == 12
    # Each write replaced the lines whole: the survivor is one writer's window.
    contents = [m.content for m in live.messages]
    assert len(contents) == 2 and contents[0][1:] == contents[1][1:]


def _record_in_child(url: str, worker: int, turns: int) -> int:
    async def run() -> int:
        async with open_store(url, load_entrypoints=False, clock=ManualClock(),
                              listen_for_changes=False) as stm:
            last = 0
            for i in range(turns):
                window = [user(f"w{worker}-{i}")]
                result = await stm.record_window(guild_turn(), window, [reply(f"w{worker}")])
                last = result.counters["p1"]
            return last
    return asyncio.run(run())


async def test_several_processes_record_windows(open_stm: Any, db_url: str) -> None:
    async with open_stm(db_url):
        pass  # the schema exists before the children race
    workers, turns = 3, 5
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(workers) as pool:
        lasts = await asyncio.gather(*(loop.run_in_executor(pool, _record_in_child, db_url, w,
                                                            turns) for w in range(workers)))
    async with open_stm(db_url) as stm:
        live = await row(stm, SERVER_KEY)
    assert live.turns_since_refresh == workers * turns
    assert max(lasts) == workers * turns
    assert len(live.messages) == 2
