"""What the plugins answer is remembered per plugin set, within a bound.

Per-provider and per-model answers (gates, token counters, phrasing) are
keyed by names the host passes on every turn; a host that names many models
must not grow the memo without end, and a memo that started over answers as
before.
"""

from __future__ import annotations

from stm_core.plugins.hooks import MEMO_ENTRIES

from .support import OpenStm, make_turn, server_key, write


async def test_the_memo_of_plugin_answers_is_bounded(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await write(stm, server_key("222"), summary="planning the raid")
        before = await stm.build_context(make_turn())
        hooks = stm.hooks
        for n in range(MEMO_ENTRIES + 10):
            assert hooks.tool_available("openai", True, True, False, f"model-{n}") is True
            assert callable(hooks.token_counter(f"provider-{n}"))
            assert 0 < len(hooks._memo) <= MEMO_ENTRIES
        assert hooks.tool_available("novelai", True, True, False) is False
        # The render memo and the warm path's plan were let go with the rest:
        # made again, they build the same context.
        after = await stm.build_context(make_turn())
        assert after.memory_items == before.memory_items and after.memory_items
