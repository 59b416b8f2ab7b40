"""A host registering a plugin in code (no packaging)."""

# -- start register-in-code --
import asyncio

import stm_shouty

from stm_core import Turn, open_store


async def textsynth_may_use_the_tool() -> bool:
    async with open_store("memory://", plugins=[stm_shouty]) as stm:
        turn = Turn(user_id="1", channel_id="2", server_id="3", provider="textsynth")
        return await stm.tool_available(turn)  # False: the plugin's gate said no


if __name__ == "__main__":
    print(asyncio.run(textsynth_may_use_the_tool()))
# -- end register-in-code --
