"""The Acme plugins, tested through a real (in-memory) stm store with the kit."""

from __future__ import annotations

import pytest
from stm_acme import digest, provider, tool_format

from stm_core import HistoryMessage, OtherChannelParts, PersonaResponse, Stm
from stm_core.testing import MakeTurn, RegisterPlugin


@pytest.fixture
def acme(register_plugin: RegisterPlugin) -> None:
    """All three Acme plugins, registered for one test."""
    for module in (provider, tool_format, digest):
        register_plugin(module)


async def chat(stm: Stm, make_turn: MakeTurn, channel_id: str, text: str) -> None:
    """One exchange in a channel, recorded as a host would after the reply."""
    turn = make_turn(channel_id=channel_id)
    await stm.record_turn(
        turn, [HistoryMessage(author_type="user", content=text, speaker_name="Alice",
                              author_id=turn.user_id)],
        [PersonaResponse(content=f"Noted: {text}", persona_name="Assistant")])


@pytest.mark.usefixtures("acme")
async def test_acme_lite_is_offered_no_tool(stm_memory_store: Stm, make_turn: MakeTurn) -> None:
    assert await stm_memory_store.tool_available(make_turn(provider="acme-lite")) is False
    assert await stm_memory_store.tool_schema(make_turn(provider="acme-lite")) is None
    assert await stm_memory_store.tool_available(make_turn(provider="acme")) is True


@pytest.mark.usefixtures("acme")
async def test_acme_turns_get_the_acme_nudge(stm_memory_store: Stm, make_turn: MakeTurn) -> None:
    await stm_memory_store.admin.set_server_params("3001", refresh_cadence=1)
    await chat(stm_memory_store, make_turn, "2001", "we met a dragon")

    acme_ctx = await stm_memory_store.build_context(make_turn(provider="acme"))
    openai_ctx = await stm_memory_store.build_context(make_turn(provider="openai"))

    assert acme_ctx.nudge_item is not None and openai_ctx.nudge_item is not None
    assert acme_ctx.nudge_item.text == (
        "[System: Acme note-keeping: after you reply, call `update_short_term_memory` "
        "with a fresh summary of this conversation.]")
    assert "Acme" not in openai_ctx.nudge_item.text


@pytest.mark.usefixtures("acme")
async def test_acme_tool_schema_uses_the_acme_format(stm_memory_store: Stm,
                                                     make_turn: MakeTurn) -> None:
    schema = await stm_memory_store.tool_schema(make_turn(provider="acme"))

    assert schema is not None
    assert schema["action"] == "update_short_term_memory"
    assert schema["about"] == provider.TOOL_DESCRIPTION
    assert [i["name"] for i in schema["inputs"]] == ["summary"]


@pytest.mark.usefixtures("acme")
async def test_other_channels_render_as_one_digest_block(stm_memory_store: Stm,
                                                         make_turn: MakeTurn) -> None:
    await stm_memory_store.admin.set_server_params("3001", render_mode="acme_digest")
    other = make_turn(channel_id="2002", provider="acme")
    result = await stm_memory_store.apply_tool_call(other, {"summary": "Planning a heist."})
    assert result.ok, result.message
    await chat(stm_memory_store, make_turn, "2002", "bring the map")

    ctx = await stm_memory_store.build_context(make_turn(channel_id="2001", provider="acme"))

    [block] = [item.text for item in ctx.memory_items if item.kind == "other_channels"]
    assert block.count("[System:") == 1  # one block, not a memory block plus raw lines
    assert "Planning a heist.\nLatest: " in block
    assert "Noted: bring the map" in block


def test_digest_renders_nothing_for_an_empty_entry() -> None:
    parts = OtherChannelParts(memory_header="[System: x:\n", raw_header="[System: y:\n",
                              body=None, crude_lines=())
    assert digest.render_digest(parts) == ""
