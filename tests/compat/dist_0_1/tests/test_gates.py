"""The gate keyed on ``anthropic/...`` strings, through a real store."""

import json

import pytest
from helpers import chat
from stm_vintage import gates

SERVER = "3001"
ROUTED = "anthropic/claude-3-5-sonnet"


@pytest.fixture(autouse=True)
def vintage_gate(register_plugin):
    register_plugin(gates)


@pytest.mark.parametrize("provider", ["anthropic/claude-2", "anthropic/claude-instant-1"])
async def test_models_without_tools_are_offered_no_tool(stm_memory_store, make_turn, provider):
    assert await stm_memory_store.tool_available(make_turn(provider=provider)) is False
    assert await stm_memory_store.tool_schema(make_turn(provider=provider)) is None


async def test_models_without_tools_get_no_nudge(stm_memory_store, make_turn):
    await stm_memory_store.admin.set_server_params(SERVER, refresh_cadence=1)
    await chat(stm_memory_store, make_turn, "we met a dragon", provider="anthropic/claude-2")
    blocked = await stm_memory_store.build_context(make_turn(provider="anthropic/claude-2"))
    routed = await stm_memory_store.build_context(make_turn(provider=ROUTED))
    assert blocked.nudge_item is None
    assert routed.nudge_item is not None


async def test_a_tool_call_of_a_blocked_model_is_refused(stm_memory_store, make_turn):
    result = await stm_memory_store.apply_tool_call(make_turn(provider="anthropic/claude-2"),
                                                    {"summary": "sneaky"})
    assert not result.ok


async def test_other_routed_models_are_offered_the_tool(stm_memory_store, make_turn):
    turn = make_turn(provider=ROUTED)
    assert await stm_memory_store.tool_available(turn) is True
    schema = await stm_memory_store.tool_schema(turn)
    assert schema is not None
    assert "update_short_term_memory" in json.dumps(schema)
    assert (await stm_memory_store.apply_tool_call(turn, {"summary": "a dragon"})).ok


async def test_the_gate_sees_the_key_as_the_host_wrote_it(stm_memory_store, make_turn):
    # Keyed on exact strings: another spelling is another key.
    assert await stm_memory_store.tool_available(make_turn(provider="Anthropic/Claude-2")) is True


async def test_formats_by_key_for_a_routed_model(stm_memory_store, make_turn):
    turn = make_turn(provider=ROUTED)
    openai = await stm_memory_store.tool_schema(turn, "openai")
    anthropic = await stm_memory_store.tool_schema(turn, "anthropic")
    gemini = await stm_memory_store.tool_schema(turn, "gemini")
    neutral = await stm_memory_store.tool_schema(turn, "neutral")
    assert openai["type"] == "function"
    assert openai["function"]["name"] == "update_short_term_memory"
    assert anthropic["name"] == "update_short_term_memory" and "input_schema" in anthropic
    assert gemini["name"] == "update_short_term_memory"
    assert [name for name in neutral["parameters"]["properties"]] == ["summary"]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "my-own-llm"])
async def test_every_provider_that_had_the_tool_in_0_1_keeps_it(stm_memory_store, make_turn,
                                                                 provider):
    schema = await stm_memory_store.tool_schema(make_turn(provider=provider))
    assert schema is not None and "update_short_term_memory" in json.dumps(schema)


async def test_novelai_keeps_no_tool(stm_memory_store, make_turn):
    assert await stm_memory_store.tool_available(make_turn(provider="novelai")) is False
