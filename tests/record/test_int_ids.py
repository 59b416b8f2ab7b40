"""Int ids (as discord.py gives them) are the same ids as their strings, on every backend."""

from __future__ import annotations

from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm


def turn(ids: dict[str, Any], **kwargs: Any) -> Turn:
    return Turn(**ids, persona_lineage_id="L1", bot_name="Tomori", triggerer_name="Ann",
                **kwargs)


INT_IDS: dict[str, Any] = {"user_id": 42, "channel_id": 1001, "server_id": 7, "persona_id": 9}
STR_IDS: dict[str, Any] = {"user_id": "42", "channel_id": "1001", "server_id": "7",
                           "persona_id": "9"}
HISTORY = [HistoryMessage(author_type="user", content="We open the crypt.", speaker_name="Ann")]
REPLIES = [PersonaResponse(content="Dust and bones.", persona_name="Tomori", persona_id=9,
                           persona_lineage_id="L1")]


async def test_int_id_turn_and_str_id_turn_share_one_memory(stm: Stm,
                                                           clock: ManualClock) -> None:
    int_turn = turn(INT_IDS)
    assert (int_turn.user_id, int_turn.channel_id, int_turn.server_id) == ("42", "1001", "7")
    recorded = await stm.record_turn(int_turn, HISTORY, REPLIES)
    assert recorded.recorded and recorded.counters == {"9": 1}
    written = await stm.apply_tool_call(int_turn, {"summary": "The party is in the crypt."})
    assert written.ok, written.message

    # The rows are keyed by the strings, whichever form the host used.
    row = await stm.adapter.get_memory(MemoryKey.server("7", "1001", "9"))
    assert row is not None and row.summary == "The party is in the crypt."
    assert row.turns_since_refresh == 0

    # A later turn with string ids (another process, another library) sees it;
    # so does a fresh store that reads from the database, not this cache.
    clock.advance(minutes=1)
    for ids in (STR_IDS, INT_IDS):
        context = await stm.build_context(turn(ids))
        assert context != StmContext.error_fallback()
        texts = [item.text for item in context.memory_items]
        assert any("The party is in the crypt." in text for text in texts), texts
    stm.engine.flush()
    context = await stm.build_context(turn(STR_IDS))
    assert any("The party is in the crypt." in i.text for i in context.memory_items)

    # The counter is one counter: a str-id turn counts on after the int-id one.
    again = await stm.record_turn(turn(STR_IDS), HISTORY, REPLIES)
    assert again.counters == {"9": 1}
    again = await stm.record_turn(turn(INT_IDS), HISTORY, REPLIES)
    assert again.counters == {"9": 2}


async def test_int_names_and_thread_ids_become_strings(stm: Stm) -> None:
    value = Turn(user_id=42, channel_id=5, server_id=7, user_names={42: "Ann"},
                 channel_names={5: "crypt"}, role_names={3: "GM"}, thread_ids=[5])
    assert value.user_names == {"42": "Ann"} and value.channel_names == {"5": "crypt"}
    assert value.role_names == {"3": "GM"} and value.thread_ids == frozenset({"5"})
    assert await stm.build_context(value) != StmContext.error_fallback()


async def test_dm_turn_with_int_ids(stm: Stm) -> None:
    dm = Turn(user_id=42, channel_id=900, persona_id=9)
    assert (await stm.record_turn(dm, HISTORY, REPLIES)).recorded
    assert await stm.adapter.get_memory(MemoryKey.user("42", "900", "9", None)) is not None
