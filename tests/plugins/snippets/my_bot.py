"""A host registering a plugin in code (no packaging)."""

import logging

from stm_core import Turn, create_plugin_manager, open_store
from stm_core.plugins import StmPluginManager


async def textsynth_may_use_the_tool() -> bool:
    # -- start register-in-code --
    import stm_shouty

    async with open_store("memory://", plugins=[stm_shouty]) as stm:
        turn = Turn(user_id="1", channel_id="2", server_id="3", provider="textsynth")
        allowed = await stm.tool_available(turn)  # False: the plugin's gate said no
    # -- end register-in-code --
    return allowed


def traced_plugin_manager() -> StmPluginManager:
    # -- start tracing --
    logging.basicConfig(format="%(name)s: %(message)s")
    pm = create_plugin_manager(trace=True)  # or STM_TRACE_PLUGINS=1 in the environment
    # -- end tracing --
    return pm
