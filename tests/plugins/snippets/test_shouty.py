"""The guide's first plugin, tested with the test kit as its author would."""

# -- start kit-test --
import stm_shouty

from stm_core import Stm
from stm_core.testing import MakeTurn, RegisterPlugin


async def test_textsynth_is_offered_no_tool(register_plugin: RegisterPlugin,
                                            stm_memory_store: Stm,
                                            make_turn: MakeTurn) -> None:
    register_plugin(stm_shouty)

    assert await stm_memory_store.tool_available(make_turn(provider="textsynth")) is False
    assert await stm_memory_store.tool_available(make_turn(provider="openai")) is True


async def test_headline_mode_shouts_other_channels(register_plugin: RegisterPlugin,
                                                   stm_memory_store: Stm,
                                                   make_turn: MakeTurn) -> None:
    register_plugin(stm_shouty)
    await stm_memory_store.admin.set_server_params("3001", render_mode="headline")
    elsewhere = make_turn(channel_id="2002")
    assert (await stm_memory_store.apply_tool_call(elsewhere, {"summary": "cake at 5"})).ok

    context = await stm_memory_store.build_context(make_turn(channel_id="2001"))

    [block] = [item.text for item in context.memory_items]
    assert "CAKE AT 5]" in block
# -- end kit-test --
