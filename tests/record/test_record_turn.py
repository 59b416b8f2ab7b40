"""Post-turn capture (reference §8): what is kept, where it goes, what it counts."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey, MemoryRecord, MemoryWrite
from stm_core.store import Stm

SERVER_KEY = MemoryKey.server("g1", "c1", "p1")
USER_KEY = MemoryKey.user("u1", "c1", "p1", "g1")
DM_KEY = MemoryKey.user("u1", "d1", "p1", None)


def guild_turn(**kwargs: Any) -> Turn:
    values: dict[str, Any] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                              "persona_id": "p1", "persona_lineage_id": "L1",
                              "parent_channel_id": "forum"}
    values.update(kwargs)
    return Turn(**values)


def dm_turn() -> Turn:
    return guild_turn(server_id=None, channel_id="d1", parent_channel_id=None)


def user(content: str, name: str | None = "Alice") -> HistoryMessage:
    return HistoryMessage(author_type="user", content=content, speaker_name=name)


def persona(content: str, name: str | None = "Tomori") -> HistoryMessage:
    return HistoryMessage(author_type="persona", content=content, speaker_name=name)


def reply(content: str, persona_id: str | None = "p1", name: str = "Tomori",
          lineage: str | None = "L1") -> PersonaResponse:
    return PersonaResponse(content=content, persona_name=name, persona_id=persona_id,
                           persona_lineage_id=lineage)


async def row(stm: Stm, key: MemoryKey) -> MemoryRecord:
    record = await stm.adapter.get_memory(key)
    assert record is not None, f"no row for {key}"
    return record


def lines(record: MemoryRecord) -> list[tuple[str, str | None, str]]:
    return [(m.role, m.speaker_name, m.content) for m in record.messages]


async def test_guild_turn_stores_cleaned_lines_in_both_rows(stm: Stm, clock: ManualClock) -> None:
    history = [
        user("Look at this [System: This message (ID: 123) replies to Bob] please  \n\n\n\nok"),
        HistoryMessage(author_type="other", content="a webhook line", speaker_name="Hook"),
        persona("[System: Reactions on this message: 👍]"),  # nothing left: dropped
        user("[System: Message metadata: sent at noon]   \t"),  # dropped too
        persona("Nice picture!", name=None),
    ]
    # A reply is cleaned like a history line, annotations included.
    result = await stm.record_turn(guild_turn(), history, [reply(
        "  Thanks, Alice! [System: Reactions on this message: 👍] ")])

    assert result.recorded and result.skipped_reason is None
    assert result.counters == {"p1": 1}
    expected = [("user", "Alice", "Look at this  please\n\nok"),
                ("model", None, "Nice picture!"),
                ("model", "Tomori", "Thanks, Alice!")]
    live, mine = await row(stm, SERVER_KEY), await row(stm, USER_KEY)
    assert lines(live) == lines(mine) == expected
    assert {m.timestamp_ms for m in live.messages} == {clock.now_ms()}
    assert (live.turns_since_refresh, mine.turns_since_refresh) == (1, 0)
    assert (live.persona_lineage_id, live.parent_channel_id) == ("L1", "forum")
    assert live.updated_at_ms == clock.now_ms()
    # The cache holds what the database returned.
    assert (await stm.engine.server_memories("g1")).records[SERVER_KEY].turns_since_refresh == 1


async def test_dm_turn_writes_and_counts_the_user_row(stm: Stm) -> None:
    for expected in (1, 2, 3):
        result = await stm.record_turn(dm_turn(), [user("hi")], [reply("hello")])
        assert result.counters == {"p1": expected}
    assert (await row(stm, DM_KEY)).turns_since_refresh == 3
    assert await stm.adapter.get_memory(MemoryKey.server("", "d1", "p1")) is None


async def test_keeps_only_the_last_messages(stm: Stm) -> None:
    keep = stm.settings.max_messages_per_channel
    history = [user(f"m{i}") for i in range(keep + 5)]
    await stm.record_turn(guild_turn(), history, [reply("last")])
    stored = [m.content for m in (await row(stm, SERVER_KEY)).messages]
    assert len(stored) == keep
    assert stored[-1] == "last" and stored[0] == f"m{6}"


async def test_messages_are_replaced_not_appended(stm: Stm) -> None:
    await stm.record_turn(guild_turn(), [user("one")], [reply("first")])
    await stm.record_turn(guild_turn(), [user("two")], [reply("second")])
    assert [m.content for m in (await row(stm, SERVER_KEY)).messages] == ["two", "second"]


async def test_each_persona_gets_its_own_rows_in_one_capture(
        stm: Stm, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[CaptureWrite]] = []
    real_capture = stm.engine.capture

    async def spy(writes: list[CaptureWrite]) -> list[MemoryRecord]:
        calls.append(list(writes))
        return await real_capture(writes)

    monkeypatch.setattr(stm.engine, "capture", spy)
    responses = [reply("A says hi", "p1", "Aiko", "L1"), reply("B says hi", "p2", "Ben", "L2"),
                 reply("A again", "p1", "Aiko", "L1")]
    result = await stm.record_turn(guild_turn(), [user("hello all")], responses)

    assert result.counters == {"p1": 1, "p2": 1}
    assert len(calls) == 1 and len(calls[0]) == 4  # (server + user) x 2 personas
    p2 = await row(stm, MemoryKey.server("g1", "c1", "p2"))
    assert p2.persona_lineage_id == "L2"
    assert [m.content for m in p2.messages] == ["hello all", "A says hi", "B says hi", "A again"]


async def test_responses_without_persona_ids_count_once(stm: Stm) -> None:
    responses = [reply("one", None, lineage=None), reply("two", None, lineage=None)]
    result = await stm.record_turn(guild_turn(persona_id=None), [user("hi")], responses)
    assert result.counters == {"": 1}
    assert (await row(stm, MemoryKey.server("g1", "c1", None))).turns_since_refresh == 1


async def test_a_guild_turn_without_a_user_writes_the_server_row_only(stm: Stm) -> None:
    result = await stm.record_turn(guild_turn(user_id=None), [user("hi")], [reply("yo")])
    assert result.counters == {"p1": 1}
    assert await stm.adapter.get_memory(USER_KEY) is None


async def test_summary_and_categories_survive_a_capture(stm: Stm) -> None:
    await stm.engine.write_memory([MemoryWrite(key=SERVER_KEY, now_ms=stm.clock.now_ms(),
                                        set_summary=True, summary="kept",
                                        set_categories=True, categories={"goals": "kept"})])
    await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
    live = await row(stm, SERVER_KEY)
    assert (live.summary, dict(live.categories)) == ("kept", {"goals": "kept"})


async def test_an_expired_summary_does_not_come_back(stm: Stm, clock: ManualClock) -> None:
    await stm.engine.write_memory([MemoryWrite(key=SERVER_KEY, now_ms=clock.now_ms(),
                                        set_summary=True, summary="yesterday")])
    clock.advance(hours=stm.settings.summary_ttl_hours + 1)
    await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
    assert (await row(stm, SERVER_KEY)).summary is None


async def test_categories_older_than_the_configured_ttl_are_dropped(
        open_stm: Any, backend_url: str, clock: ManualClock) -> None:
    """The store's own TTL decides, not the default: 1 hour here instead of 12
    (a row without a summary expires by the lines' TTL)."""
    async with open_stm(backend_url, settings=Settings(ttl_hours=1)) as stm:
        await stm.engine.write_memory([MemoryWrite(key=SERVER_KEY, now_ms=clock.now_ms(),
                                            set_categories=True, categories={"goals": "old"})])
        clock.advance(hours=2)
        await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
        assert dict((await row(stm, SERVER_KEY)).categories) == {}


async def test_a_summary_older_than_the_configured_summary_ttl_is_dropped(
        open_stm: Any, backend_url: str, clock: ManualClock) -> None:
    """2 hours here instead of 24; the lines' TTL (a year) keeps the row itself alive."""
    async with open_stm(backend_url, settings=Settings(ttl_hours=8760,
                                                       summary_ttl_hours=2)) as stm:
        await stm.engine.write_memory([MemoryWrite(key=SERVER_KEY, now_ms=clock.now_ms(),
                                            set_summary=True, summary="this morning")])
        clock.advance(hours=3)
        await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
        assert (await row(stm, SERVER_KEY)).summary is None


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"stop_response": True}, "stop_response"),
    ({"history": []}, "empty_history"),
    ({"privacy_full": True}, "privacy_full"),
    ({"responses": []}, "no_persona_responses"),
])
async def test_skipped_turns_write_nothing(stm: Stm, kwargs: dict[str, Any], reason: str) -> None:
    args: dict[str, Any] = {"history": [user("hi")], "responses": [reply("yo")]}
    args.update(kwargs)
    result = await stm.record_turn(guild_turn(), **args)
    assert (result.recorded, result.skipped_reason, dict(result.counters)) == (False, reason, {})
    assert await stm.adapter.get_memory(SERVER_KEY) is None


async def test_cadence_timeline(stm: Stm) -> None:
    """Reference §8: counter 5 after five turns, the tool resets it, the turn
    that called the tool then counts 1."""
    for _ in range(5):
        await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
    assert (await row(stm, SERVER_KEY)).turns_since_refresh == 5
    turn = guild_turn()
    assert (await stm.apply_tool_call(turn, {"summary": "caught up"})).ok
    result = await stm.record_turn(turn, [user("hi")], [reply("yo")])
    assert result.counters == {"p1": 1}


async def test_database_failures_raise_storage_error(
        stm: Stm, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(writes: object) -> list[MemoryRecord]:
        raise ConnectionResetError("server closed the connection")

    monkeypatch.setattr(stm.adapter, "capture", broken)
    with pytest.raises(StorageError, match="server closed the connection"):
        await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
    assert SERVER_KEY not in (await stm.engine.server_memories("g1")).records


async def test_a_closed_database_raises_storage_error(open_stm: Any, db_url: str) -> None:
    async with open_stm(db_url) as stm:
        await stm.adapter.aclose()
        with pytest.raises(StorageError):
            await stm.record_turn(guild_turn(), [user("hi")], [reply("yo")])
