"""Edges of post-turn capture: many replies, personas whose counters differ,
DM turns without a user, and persona ids that are empty strings."""

from __future__ import annotations

import attrs

from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm

from .test_record_turn import SERVER_KEY, dm_turn, guild_turn, reply, row, user


async def test_a_turn_with_more_replies_than_the_limit_keeps_the_last_ones(stm: Stm) -> None:
    keep = stm.settings.max_messages_per_channel
    replies = [reply(f"r{i}") for i in range(keep + 4)]
    await stm.record_turn(guild_turn(), [user("hello")], replies)
    stored = [m.content for m in (await row(stm, SERVER_KEY)).messages]
    assert stored == [f"r{i}" for i in range(4, keep + 4)]


async def test_each_persona_reports_the_counter_of_its_own_row(stm: Stm) -> None:
    p2 = MemoryKey.server("g1", "c1", "p2")
    for _ in range(3):  # p2 has counted three turns already, p1 none
        await stm.engine.capture([CaptureWrite(key=p2, messages=(), now_ms=stm.clock.now_ms(),
                                        counter_increment=1)])
    result = await stm.record_turn(
        guild_turn(), [user("hi")],
        [reply("from p1", "p1"), reply("from p2", "p2", lineage="L2")])
    assert result.counters == {"p1": 1, "p2": 4}
    assert (await row(stm, p2)).turns_since_refresh == 4
    assert (await row(stm, SERVER_KEY)).turns_since_refresh == 1


async def test_a_dm_turn_without_a_user_is_skipped(stm: Stm) -> None:
    turn = attrs.evolve(dm_turn(), user_id=None)
    result = await stm.record_turn(turn, [user("hi")], [reply("yo")])
    assert (result.recorded, result.skipped_reason) == (False, "no_user")


async def test_an_empty_persona_id_is_the_same_row_as_no_persona(stm: Stm) -> None:
    await stm.record_turn(guild_turn(persona_id=None), [user("one")],
                          [reply("first", "", lineage=None)])
    result = await stm.record_turn(guild_turn(persona_id=None), [user("two")],
                                   [reply("second", None, lineage=None)])
    assert result.counters == {"": 2}
    record = await row(stm, MemoryKey.server("g1", "c1", None))
    assert [m.content for m in record.messages] == ["two", "second"]


async def test_replies_with_an_empty_and_no_persona_id_count_the_turn_once(stm: Stm) -> None:
    result = await stm.record_turn(guild_turn(persona_id=None), [user("one")],
                                   [reply("first", "", lineage=None),
                                    reply("second", None, lineage=None)])
    assert result.counters == {"": 1}
    assert (await row(stm, MemoryKey.server("g1", "c1", None))).turns_since_refresh == 1


async def test_a_stored_user_line_keeps_its_author_id(stm: Stm) -> None:
    await stm.record_turn(guild_turn(), [attrs.evolve(user("hi"), author_id="42")],
                          [reply("yo")])
    assert [m.author_id for m in (await row(stm, SERVER_KEY)).messages] == ["42", None]


async def test_a_turn_without_a_channel_is_skipped_as_no_channel(stm: Stm) -> None:
    result = await stm.record_turn(guild_turn(channel_id=""), [user("hi")], [reply("yo")])
    assert (result.recorded, result.skipped_reason) == (False, "no_channel")


async def test_a_dm_row_takes_the_lineage_of_the_persona_that_replied(stm: Stm) -> None:
    await stm.record_turn(dm_turn(), [user("hi")], [reply("yo", "p2", lineage="L2")])
    stored = await row(stm, MemoryKey.user("u1", "d1", "p2", None))
    assert stored.persona_lineage_id == "L2"
