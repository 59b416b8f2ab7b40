"""The tool declaration: modes, descriptions, formats, availability (reference §3.1, §3.3)."""

from __future__ import annotations

import pytest

from stm_core.engine.profile import SUMMARY_FIELD_DESCRIPTION
from stm_core.errors import ValidationError
from stm_core.models import Turn
from stm_core.store import Stm
from stm_core.tool import TOOL_NAME
from stm_core.tool.schema import build_tool_schema
from stm_plugins.default_phrasing import TOOL_DESCRIPTION

from .conftest import Configure

CATEGORIES = [
    ("Goals", "What the party is after; use {short_term_memory_tool} wisely {mystery}"),
    ("HP/MP", "Hit points of {user}"),
    ("Party Status", "Who is wounded"),
]


def guild_turn(**kwargs: object) -> Turn:
    values: dict[str, object] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                                 "persona_id": "p1", "provider": "openai"}
    values.update(kwargs)
    return Turn(**values)  # type: ignore[arg-type]


async def test_summary_mode_offers_one_summary_property(stm: Stm) -> None:
    schema = await stm.tool_schema(guild_turn())
    assert schema == {"type": "function", "function": {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION.replace("{long_term_memory_hint}", ""),
        "parameters": {"type": "object",
                       "properties": {"summary": {"type": "string",
                                                  "description": SUMMARY_FIELD_DESCRIPTION}},
                       "required": ["summary"]}}}


async def test_dm_uses_the_defaults(stm: Stm) -> None:
    schema = await stm.tool_schema(guild_turn(server_id=None))
    assert schema is not None
    assert list(schema["function"]["parameters"]["properties"]) == ["summary"]


async def test_category_mode_has_one_property_per_slug_in_position_order(
        stm: Stm, configure: Configure) -> None:
    await configure("g1", categories=CATEGORIES)
    schema = await stm.tool_schema(guild_turn(), "neutral")
    assert schema is not None
    params = schema["parameters"]
    assert list(params["properties"]) == ["goals", "hp_mp", "party_status"]
    assert params["required"] == ["goals", "hp_mp", "party_status"]
    assert schema["mode"] == "category"
    # Macros expanded, unknown placeholders stripped, identity macros kept.
    assert params["properties"]["goals"]["description"] == (
        "What the party is after; use `update_short_term_memory` wisely mystery")
    assert params["properties"]["hp_mp"]["description"] == "Hit points of {user}"


@pytest.mark.parametrize("categories", [[], CATEGORIES], ids=["summary", "category"])
async def test_description_override_applies_in_both_modes(
        stm: Stm, configure: Configure, categories: list[tuple[str, str]]) -> None:
    override = "Track {category_labels} via {short_term_memory_tool} {x}"
    await configure("g1", categories=categories, tool_description_override=override)
    schema = await stm.tool_schema(guild_turn(), "anthropic")
    assert schema is not None
    labels = "Goals, HP/MP, Party Status" if categories else "category_labels"
    assert schema["description"] == f"Track {labels} via `update_short_term_memory` x"


async def test_format_follows_the_provider(stm: Stm) -> None:
    anthropic = await stm.tool_schema(guild_turn(provider="anthropic"))
    gemini = await stm.tool_schema(guild_turn(provider="gemini"))
    unstated = await stm.tool_schema(guild_turn(provider=""))
    assert anthropic is not None and "input_schema" in anthropic
    assert gemini is not None and gemini["parameters"]["type"] == "OBJECT"
    assert unstated is not None and unstated["type"] == "function"
    # Unknown: the fallback, as in 0.1 (the warning is read in test_provider_keys).
    assert await stm.tool_schema(guild_turn(provider="some-new-llm")) == unstated


async def test_unknown_format_key_lists_the_registered_ones(stm: Stm) -> None:
    with pytest.raises(ValidationError) as err:
        await stm.tool_schema(guild_turn(), "openia")
    assert "'openia'" in str(err.value)
    for key in ("anthropic", "gemini", "neutral", "openai"):
        assert key in str(err.value)
    known = err.value.allowed
    assert known is not None and known.split(", ") == sorted(known.split(", "))
    assert err.value.field == "format"
    assert str(err.value) == f"unknown tool format 'openia'; registered formats: {known}"


@pytest.mark.parametrize("turn_changes", [
    {"provider": "novelai"},
    {"has_tools": False},
    {"explicit_long_term_intent": True},
    {"stm_update_disabled": True},
])
async def test_not_offered_when_a_gate_is_closed(stm: Stm, turn_changes: dict[str, object]) -> None:
    assert await stm.tool_schema(guild_turn(**turn_changes)) is None


async def test_not_offered_when_the_capability_is_off(stm: Stm, configure: Configure) -> None:
    await configure("g1", stm_enabled=False)
    assert await stm.tool_schema(guild_turn()) is None


async def test_not_offered_again_after_a_successful_update(stm: Stm) -> None:
    turn = guild_turn()
    assert (await stm.apply_tool_call(turn, {"summary": "The party met."})).ok
    assert await stm.tool_schema(turn) is None
    assert await stm.tool_schema(guild_turn()) is not None


async def test_returned_dicts_are_the_callers_to_change(stm: Stm) -> None:
    first = await stm.tool_schema(guild_turn())
    assert first is not None
    first["function"]["parameters"]["properties"].clear()
    first["function"]["name"] = "hacked"
    second = await stm.tool_schema(guild_turn())
    assert second is not None
    assert second["function"]["name"] == TOOL_NAME
    assert "summary" in second["function"]["parameters"]["properties"]


async def test_schema_follows_a_settings_change(stm: Stm, configure: Configure) -> None:
    before = await stm.tool_schema(guild_turn(), "neutral")
    await configure("g1", categories=CATEGORIES)
    after = await stm.tool_schema(guild_turn(), "neutral")
    assert before is not None and after is not None
    assert before["mode"] == "summary" and after["mode"] == "category"


async def test_build_tool_schema_is_a_pure_function_of_profile_and_prompts(
        stm: Stm, configure: Configure) -> None:
    await configure("g1", categories=CATEGORIES)
    profile = await stm.engine.profile_for("g1")
    prompts = stm.profiles.prompts("g1", profile, "openai")
    schema = build_tool_schema(profile, prompts)
    assert schema.name == TOOL_NAME
    assert schema.required == ("goals", "hp_mp", "party_status")
    assert schema == build_tool_schema(profile, prompts)
