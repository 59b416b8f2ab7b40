"""Edges of applying the tool: the length limit, unidentifiable turns, and
arguments that are empty or not an object."""

from __future__ import annotations

import logging

import pytest

from stm_core.models import Turn
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm

from .conftest import Configure
from .test_apply_tool_call import guild_turn, row

SERVER_KEY = MemoryKey.server("g1", "c1", "p1")


async def test_a_summary_of_exactly_the_limit_is_kept_whole(stm: Stm) -> None:
    limit = stm.settings.max_summary_length
    result = await stm.apply_tool_call(guild_turn(), {"summary": "a" * limit})
    assert result.ok
    assert result.truncated == ()
    assert (await row(stm, SERVER_KEY)).summary == "a" * limit


async def test_one_character_over_the_limit_is_cut_and_reported(stm: Stm) -> None:
    limit = stm.settings.max_summary_length
    result = await stm.apply_tool_call(guild_turn(), {"summary": "b" * (limit + 1)})
    assert result.ok
    assert result.truncated == ("summary",)
    assert (await row(stm, SERVER_KEY)).summary == "b" * limit


async def test_category_values_obey_the_same_limit(stm: Stm, configure: Configure) -> None:
    await configure("g1", categories=[("Goals", "aims"), ("Mood", "feelings")])
    limit = stm.settings.max_summary_length
    result = await stm.apply_tool_call(
        guild_turn(), {"goals": "g" * limit, "mood": "m" * (limit + 7)})
    assert result.ok
    assert result.truncated == ("mood",)
    assert result.written == {"goals": "g" * limit, "mood": "m" * limit}


@pytest.mark.parametrize("missing", [{"user_id": ""}, {"channel_id": ""}])
async def test_a_turn_without_user_or_channel_is_refused_and_writes_nothing(
        stm: Stm, missing: dict[str, str]) -> None:
    turn: Turn = guild_turn(**missing)
    result = await stm.apply_tool_call(turn, {"summary": "something"})
    assert not result.ok
    assert result.code == "no_identity"
    assert await stm.adapter.get_memory(SERVER_KEY) is None


@pytest.mark.parametrize("missing", [{"user_id": ""}, {"channel_id": ""}])
async def test_category_mode_refuses_an_unidentifiable_turn_too(
        stm: Stm, configure: Configure, missing: dict[str, str]) -> None:
    await configure("g1", categories=[("Goals", "aims")])
    result = await stm.apply_tool_call(guild_turn(**missing), {"goals": "x"})
    assert (result.ok, result.code) == (False, "no_identity")


@pytest.mark.parametrize("arguments", ["", "   "])
async def test_empty_raw_arguments_count_as_an_empty_object(stm: Stm, arguments: str) -> None:
    result = await stm.apply_tool_call(guild_turn(), arguments)
    assert (result.ok, result.code) == (False, "invalid_summary")


@pytest.mark.parametrize("arguments", ["[1, 2]", '"summary"', "42", "{not json"])
async def test_raw_arguments_that_are_not_a_json_object_are_refused(
        stm: Stm, arguments: str) -> None:
    result = await stm.apply_tool_call(guild_turn(), arguments)
    assert (result.ok, result.code) == (False, "invalid_arguments")
    assert await stm.adapter.get_memory(SERVER_KEY) is None


async def test_a_non_mapping_argument_object_is_refused(stm: Stm) -> None:
    result = await stm.apply_tool_call(guild_turn(), ["summary", "x"])  # type: ignore[arg-type]
    assert (result.ok, result.code) == (False, "invalid_arguments")


async def test_a_refused_call_leaves_the_turn_free_to_try_again(stm: Stm) -> None:
    turn = guild_turn()
    assert not (await stm.apply_tool_call(turn, "[]")).ok
    assert (await stm.apply_tool_call(turn, {"summary": "now valid"})).ok


async def test_a_cut_is_logged_with_the_field_and_both_lengths(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    limit = stm.settings.max_summary_length
    with caplog.at_level(logging.INFO, logger="stm.tool.apply"):
        await stm.apply_tool_call(guild_turn(), {"summary": "c" * (limit + 5)})
    assert [r.getMessage() for r in caplog.records if r.name == "stm.tool.apply"] == [
        f"update_short_term_memory: summary truncated from {limit + 5} to {limit} characters"]
