"""Nudge, tool description and macro for ``anthropic/...`` providers."""

import json

import pytest
from helpers import chat
from stm_vintage import phrasing

SERVER = "3001"
ROUTED = "anthropic/claude-3-5-sonnet"


@pytest.fixture(autouse=True)
def vintage_phrasing(register_plugin):
    register_plugin(phrasing)


async def nudged(stm, make_turn, provider):
    await stm.admin.set_server_params(SERVER, refresh_cadence=1)
    await chat(stm, make_turn, "we met a dragon", provider=provider)
    context = await stm.build_context(make_turn(provider=provider))
    assert context.nudge_item is not None
    return context.nudge_item.text


async def test_routed_turns_get_the_vintage_nudge(stm_memory_store, make_turn):
    text = await nudged(stm_memory_store, make_turn, ROUTED)
    assert text == "[System: Vintage: refresh your notes with `update_short_term_memory`.]"


async def test_other_providers_keep_the_default_nudge(stm_memory_store, make_turn):
    text = await nudged(stm_memory_store, make_turn, "openai")
    assert "Vintage" not in text and "update_short_term_memory" in text


async def test_the_tool_description_and_its_macro(stm_memory_store, make_turn):
    schema = await stm_memory_store.tool_schema(make_turn(provider=ROUTED), "anthropic")
    assert schema["description"] == "Vintage notes (kept since 0.1)"


async def test_other_providers_keep_the_default_description(stm_memory_store, make_turn):
    schema = await stm_memory_store.tool_schema(make_turn(provider="openai"), "openai")
    description = schema["function"]["description"]
    assert "Vintage" not in description and "vintage_signature" not in description


async def test_the_offered_tool_carries_the_description(stm_memory_store, make_turn):
    schema = await stm_memory_store.tool_schema(make_turn(provider=ROUTED))
    assert schema is not None
    assert "Vintage notes (kept since 0.1)" in json.dumps(schema)
