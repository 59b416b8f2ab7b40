"""A reply without ``persona_id`` is the turn's persona's when it is the only one.

A host passed ``Turn(persona_id="1")`` and ``PersonaResponse(...)`` without a
persona id: the counter went to persona ``''`` and the nudge never came for
persona 1. The lineage already defaulted to the turn's; the persona now does
too. Among several replies stm cannot tell, and warns once per process.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.pipeline import record
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm
from tests.pipeline.support import set_settings

TURN = Turn(user_id="42", channel_id="1001", server_id="7", persona_id="1",
            persona_lineage_id="L", has_tools=True, provider="openai")
WINDOW = [HistoryMessage(author_type="user", content="hi", speaker_name="Alice",
                         author_id="42", is_trigger=True)]


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(record, "_unnamed_persona_warned", False)
    yield


async def test_the_only_reply_counts_for_the_turns_persona_and_the_nudge_comes(
        stm: Stm) -> None:
    await set_settings(stm, "7", refresh_cadence=2)
    reply = [PersonaResponse(content="hello", persona_name="Tomori")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        first = await stm.record_turn(TURN, WINDOW, reply)
        second = await stm.record_turn(TURN, WINDOW, reply)
    assert (first.counters, second.counters) == ({"1": 1}, {"1": 2})
    row = await stm.adapter.get_memory(MemoryKey.server("7", "1001", "1"))
    assert row is not None and row.persona_lineage_id == "L"
    assert await stm.adapter.get_memory(MemoryKey.server("7", "1001", None)) is None
    assert (await stm.build_context(TURN)).nudge_item is not None


async def test_several_replies_without_ids_warn_once_and_count_under_no_persona(
        stm: Stm) -> None:
    replies = [PersonaResponse(content="hello", persona_name="Tomori"),
               PersonaResponse(content="hi", persona_name="Rin", persona_id="2")]
    with pytest.warns(UserWarning, match="without persona_id") as caught:
        result = await stm.record_turn(TURN, WINDOW, replies)
        await stm.record_turn(TURN, WINDOW, replies)
    assert len(caught) == 1
    assert caught[0].filename == __file__  # it points at the host's call
    assert "'1'" in str(caught[0].message)
    assert result.counters == {"": 1, "2": 1}


async def test_a_turn_without_a_persona_warns_about_nothing(stm: Stm) -> None:
    turn = Turn(user_id="42", channel_id="1001", server_id="7")
    replies = [PersonaResponse(content="a", persona_name="A"),
               PersonaResponse(content="b", persona_name="B")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = await stm.record_turn(turn, WINDOW, replies)
    assert result.counters == {"": 1}
