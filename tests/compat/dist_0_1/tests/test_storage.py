"""The ``vintage://`` adapter: through a store, and the conformance suite."""

import pytest
from stm_vintage import storage
from stm_vintage.storage import VintageAdapter

from stm_core import create_plugin_manager, open_store
from stm_core.testing import StorageAdapterConformance


class TestVintageAdapter(StorageAdapterConformance):
    @pytest.fixture
    async def adapter(self):
        adapter = VintageAdapter("vintage://")
        await adapter.setup()
        yield adapter
        await adapter.aclose()


async def test_a_whole_cycle_on_the_vintage_adapter(make_turn):
    async with open_store("vintage://", plugins=[storage], load_entrypoints=False) as stm:
        elsewhere = make_turn(channel_id="2002", provider="anthropic/claude-3-5-sonnet")
        assert (await stm.apply_tool_call(elsewhere, {"summary": "cake at 5"})).ok
        context = await stm.build_context(make_turn(channel_id="2001"))
        assert any("cake at 5" in item.text for item in context.memory_items)


def test_the_plugin_manager_takes_the_adapter_module():
    pm = create_plugin_manager(load_entrypoints=False, plugins=[storage])
    assert pm.is_registered(storage)
