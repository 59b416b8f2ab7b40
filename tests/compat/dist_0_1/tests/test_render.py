"""The ``vintage_ledger`` render mode."""

import pytest
from stm_vintage import render

from stm_core import OtherChannelParts

SERVER = "3001"


@pytest.fixture(autouse=True)
def vintage_render(register_plugin):
    register_plugin(render)


async def other_channel_blocks(stm, make_turn, render_mode):
    await stm.admin.set_server_params(SERVER, render_mode=render_mode)
    assert (await stm.apply_tool_call(make_turn(channel_id="2002"), {"summary": "cake at 5"})).ok
    context = await stm.build_context(make_turn(channel_id="2001"))
    return [item.text for item in context.memory_items]


async def test_the_ledger_renders_other_channels(stm_memory_store, make_turn):
    [block] = await other_channel_blocks(stm_memory_store, make_turn, "vintage_ledger")
    assert "LEDGER: cake at 5]" in block
    assert block.count("[System:") == 1


async def test_the_default_mode_is_unchanged(stm_memory_store, make_turn):
    blocks = await other_channel_blocks(stm_memory_store, make_turn, "crude_summary")
    assert blocks and all("LEDGER" not in block for block in blocks)
    assert any("cake at 5" in block for block in blocks)


def test_an_entry_without_a_summary_renders_nothing():
    parts = OtherChannelParts(memory_header="[System: memory:\n", raw_header="[System: raw:\n",
                              body=None, crude_lines=("Alice: hi\n",))
    assert render.render_ledger(parts) == ""


def test_the_render_function_builds_one_block():
    parts = OtherChannelParts(memory_header="[System: memory:\n", raw_header="[System: raw:\n",
                              body="cake at 5", crude_lines=())
    assert render.render_ledger(parts) == "[System: memory:\nLEDGER: cake at 5]\n\n"
