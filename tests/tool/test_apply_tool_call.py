"""Applying ``update_short_term_memory`` (reference §3.4): guards, modes, writes,
and failures that come back as results, never as crashes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stm_core.errors import StorageError
from stm_core.models import Turn
from stm_core.storage.records import CaptureWrite, MemoryKey, MemoryRecord, MemoryWrite
from stm_core.store import Stm

from .conftest import Configure

SERVER_KEY = MemoryKey.server("g1", "c1", "p1")
USER_KEY = MemoryKey.user("u1", "c1", "p1", "g1")
DM_KEY = MemoryKey.user("u1", "d1", "p1", None)
CATEGORIES = [("Goals", "What we are after"), ("HP/MP", "Hit points"),
              ("Party Status", "Who is wounded")]


def guild_turn(**kwargs: object) -> Turn:
    values: dict[str, object] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                                 "persona_id": "p1", "persona_lineage_id": "L1",
                                 "parent_channel_id": "forum", "provider": "openai"}
    values.update(kwargs)
    return Turn(**values)  # type: ignore[arg-type]


def dm_turn(**kwargs: object) -> Turn:
    return guild_turn(server_id=None, channel_id="d1", parent_channel_id=None, **kwargs)


async def count_turns(stm: Stm, key: MemoryKey, n: int) -> None:
    """Bump a row's counter ``n`` times the way record_turn does."""
    for _ in range(n):
        await stm.engine.capture([CaptureWrite(key=key, messages=(), now_ms=stm.clock.now_ms(),
                                        counter_increment=1)])


async def row(stm: Stm, key: MemoryKey) -> MemoryRecord:
    record = await stm.adapter.get_memory(key)
    assert record is not None, f"no row for {key}"
    return record


# -- summary mode -------------------------------------------------------------------

async def test_guild_summary_goes_to_the_server_row_and_the_users_copy(stm: Stm) -> None:
    await count_turns(stm, SERVER_KEY, 5)
    await count_turns(stm, USER_KEY, 2)
    await stm.engine.write_memory([MemoryWrite(key=SERVER_KEY, now_ms=stm.clock.now_ms(),
                                        set_categories=True, categories={"old": "kept"})])

    result = await stm.apply_tool_call(guild_turn(), {"summary": "  The party met Bob.  "})

    assert result.ok and result.code is None
    assert "no user notification" in result.message.lower()
    assert result.written == {"summary": "The party met Bob."}
    live, mine = await row(stm, SERVER_KEY), await row(stm, USER_KEY)
    assert live.summary == mine.summary == "The party met Bob."
    assert (live.turns_since_refresh, live.last_refreshed_turn) == (0, 1)
    assert mine.turns_since_refresh == 2  # only the live scope is reset
    assert live.categories == {"old": "kept"}  # categories untouched
    assert (live.persona_lineage_id, live.parent_channel_id) == ("L1", "forum")
    # The cache saw the committed rows.
    view = await stm.engine.server_memories("g1")
    assert view.records[SERVER_KEY].summary == "The party met Bob."


async def test_dm_summary_goes_to_the_user_row_only(stm: Stm) -> None:
    await count_turns(stm, DM_KEY, 3)
    result = await stm.apply_tool_call(dm_turn(), {"summary": "Talked about Rust."})
    assert result.ok
    dm = await row(stm, DM_KEY)
    assert dm.summary == "Talked about Rust."
    assert dm.turns_since_refresh == 0
    assert dm.key.server_id == ""
    assert await stm.adapter.get_memory(MemoryKey.server("", "d1", "p1")) is None


async def test_summary_is_sanitised_and_truncated_in_code_points(stm: Stm) -> None:
    limit = stm.settings.max_summary_length
    text = "{mood} {user} " + "😀" * (limit + 50)
    result = await stm.apply_tool_call(guild_turn(), {"summary": text})
    assert result.ok and result.truncated == ("summary",)
    stored = (await row(stm, SERVER_KEY)).summary
    assert stored is not None and len(stored) == limit
    assert stored.startswith("mood {user} 😀")


@pytest.mark.parametrize(("arguments", "code", "message"), [
    ({"summary": 42}, "invalid_summary", "summary must be a string."),
    ({}, "invalid_summary", "summary must be a string."),
    ({"summary": " \n\t "}, "empty_summary", "summary cannot be empty."),
])
async def test_bad_summaries_fail_and_write_nothing(stm: Stm, arguments: dict[str, object],
                                                    code: str, message: str) -> None:
    turn = guild_turn()
    result = await stm.apply_tool_call(turn, arguments)
    assert (result.ok, result.code, result.message) == (False, code, message)
    assert await stm.adapter.get_memory(SERVER_KEY) is None
    assert (await stm.apply_tool_call(turn, {"summary": "retry works"})).ok


async def test_a_turn_without_a_user_cannot_be_identified(stm: Stm) -> None:
    result = await stm.apply_tool_call(guild_turn(user_id=None), {"summary": "x"})
    assert (result.ok, result.code) == (False, "no_identity")
    assert await stm.adapter.get_memory(SERVER_KEY) is None


async def test_raw_json_arguments_are_accepted(stm: Stm) -> None:
    assert (await stm.apply_tool_call(guild_turn(), '{"summary": "from JSON"}')).ok  # type: ignore[arg-type]
    bad = await stm.apply_tool_call(guild_turn(), "not json")  # type: ignore[arg-type]
    assert (bad.ok, bad.code) == (False, "invalid_arguments")


# -- category mode ------------------------------------------------------------------

async def test_categories_replace_the_whole_dict(stm: Stm, configure: Configure) -> None:
    await configure("g1", categories=CATEGORIES)
    await stm.engine.write_memory([MemoryWrite(
        key=SERVER_KEY, now_ms=stm.clock.now_ms(), set_summary=True, summary="old summary",
        set_categories=True, categories={"goals": "old", "party_status": "old"})])
    await count_turns(stm, SERVER_KEY, 4)

    result = await stm.apply_tool_call(guild_turn(), {
        "goals": " Reach the tower {soon} ", "hp_mp": "   ", "party_status": 7,
        "summary": "not a slug here", "unknown": "ignored"})

    assert result.ok and result.written == {"goals": "Reach the tower soon"}
    for key in (SERVER_KEY, USER_KEY):
        record = await row(stm, key)
        assert record.categories == {"goals": "Reach the tower soon"}
    live = await row(stm, SERVER_KEY)
    assert live.summary == "old summary"
    assert live.turns_since_refresh == 0


async def test_category_values_keep_slug_order_and_are_truncated(stm: Stm,
                                                                 configure: Configure) -> None:
    await configure("g1", categories=CATEGORIES)
    long = "x" * (stm.settings.max_summary_length + 1)
    result = await stm.apply_tool_call(guild_turn(), {"party_status": long, "goals": "g"})
    assert result.ok and result.truncated == ("party_status",)
    assert list((await row(stm, SERVER_KEY)).categories) == ["goals", "party_status"]


async def test_no_usable_category_field_writes_nothing(stm: Stm, configure: Configure) -> None:
    await configure("g1", categories=CATEGORIES)
    result = await stm.apply_tool_call(guild_turn(), {"goals": "", "hp_mp": None})
    assert (result.ok, result.code) == (False, "no_category_fields")
    assert result.message == ("At least one category field must be provided: "
                              "goals, hp_mp, party_status.")
    assert await stm.adapter.get_memory(SERVER_KEY) is None


async def test_mode_is_read_when_the_tool_runs(stm: Stm, configure: Configure) -> None:
    """A schema built in summary mode, then categories configured: the call is
    judged by the categories."""
    assert (await stm.tool_schema(guild_turn(), "neutral") or {})["mode"] == "summary"
    await configure("g1", categories=CATEGORIES)
    result = await stm.apply_tool_call(guild_turn(), {"summary": "stale schema"})
    assert result.code == "no_category_fields"


async def test_a_single_non_summary_category_is_category_mode(stm: Stm,
                                                             configure: Configure) -> None:
    await configure("g1", categories=[("Summary!", "a running summary")])
    result = await stm.apply_tool_call(guild_turn(), {"summary": "x"})
    assert result.ok and (await row(stm, SERVER_KEY)).categories == {"summary": "x"}


# -- guards and the once-per-turn rule --------------------------------------------------

async def test_once_per_turn(stm: Stm) -> None:
    turn = guild_turn()
    assert (await stm.apply_tool_call(turn, {"summary": "first"})).ok
    again = await stm.apply_tool_call(turn, {"summary": "second"})
    assert (again.ok, again.code) == (False, "already_updated")
    assert (await row(stm, SERVER_KEY)).summary == "first"
    assert (await stm.apply_tool_call(guild_turn(), {"summary": "next turn"})).ok


async def test_parallel_calls_of_one_turn_write_once(stm: Stm) -> None:
    turn = guild_turn()
    results = await asyncio.gather(*(stm.apply_tool_call(turn, {"summary": f"call {i}"})
                                     for i in range(3)))
    assert sum(r.ok for r in results) == 1
    assert {r.code for r in results if not r.ok} == {"already_updated"}


async def test_a_turn_flagged_disabled_is_refused(stm: Stm) -> None:
    result = await stm.apply_tool_call(guild_turn(stm_update_disabled=True), {"summary": "x"})
    assert result.code == "already_updated"


async def test_capability_off_refuses_and_wins_over_other_guards(
        stm: Stm, configure: Configure) -> None:
    await configure("g1", stm_enabled=False)
    result = await stm.apply_tool_call(guild_turn(explicit_long_term_intent=True,
                                                  provider="novelai"), {"summary": "x"})
    assert (result.ok, result.code) == (False, "disabled")
    assert await stm.adapter.get_memory(SERVER_KEY) is None


async def test_explicit_intent_comes_before_already_updated(stm: Stm) -> None:
    result = await stm.apply_tool_call(
        guild_turn(explicit_long_term_intent=True, stm_update_disabled=True), {"summary": "x"})
    assert result.code == "explicit_long_term_intent"
    assert "long-term" in result.message


@pytest.mark.parametrize("changes", [{"provider": "novelai"}, {"has_tools": False}])
async def test_closed_provider_gates_refuse(stm: Stm, changes: dict[str, object]) -> None:
    result = await stm.apply_tool_call(guild_turn(**changes), {"summary": "x"})
    assert (result.ok, result.code) == (False, "unavailable")
    assert await stm.adapter.get_memory(SERVER_KEY) is None


# -- failures come back as results ------------------------------------------------------

async def test_a_storage_failure_is_a_result_not_a_crash(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async def failing(writes: object) -> list[MemoryRecord]:
        raise StorageError("database is locked")

    monkeypatch.setattr(stm.adapter, "write_memory", failing)
    turn = guild_turn()
    result = await stm.apply_tool_call(turn, {"summary": "x"})
    assert (result.ok, result.code) == (False, "error")
    assert result.message == "Error updating short-term memory: database is locked"
    assert "failed" in caplog.text
    assert SERVER_KEY not in (await stm.engine.server_memories("g1")).records
    # Not counted as used: the model may retry once storage is back.
    monkeypatch.undo()
    assert (await stm.apply_tool_call(turn, {"summary": "x"})).ok


async def test_a_closed_database_is_a_result_not_a_crash(open_stm: Any, db_url: str) -> None:
    async with open_stm(db_url) as stm:
        await stm.engine.profile_for("g1")  # settings cached: the failure is the write itself
        await stm.adapter.aclose()
        result = await stm.apply_tool_call(guild_turn(), {"summary": "x"})
    assert (result.ok, result.code) == (False, "error")
    assert result.message.startswith("Error updating short-term memory: ")
