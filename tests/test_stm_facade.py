"""``Stm`` is the host's facade over its engine: the engine's parts read
through, the moved methods still work for one release and warn, and
``record_window`` is ``record_turn``."""

from __future__ import annotations

import pytest

from stm_core.engine.core import Engine
from stm_core.models import Turn
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from stm_plugins.memory_storage import MemoryAdapter
from tests.conftest import OpenStm

PARTS = ("adapter", "pm", "hooks", "settings", "clock", "cache", "profiles")


async def test_the_engines_parts_read_through(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        assert isinstance(stm.engine, Engine)
        for name in PARTS:
            assert getattr(stm, name) is getattr(stm.engine, name), name


async def test_a_swapped_adapter_is_the_engines(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        original = stm.adapter
        other = MemoryAdapter()
        stm.adapter = other
        assert stm.engine.adapter is other
        key = MemoryKey.server("g", "c", None)
        await stm.engine.capture([CaptureWrite(key=key, messages=(), now_ms=1,
                                               counter_increment=1)])
        assert await other.get_memory(key) is not None
        stm.adapter = original


async def test_moved_methods_warn_and_answer_as_the_engine(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        key = MemoryKey.server("g", "c", None)
        with pytest.warns(DeprecationWarning, match=r"stm\.engine\.capture"):
            [written] = await stm.capture([CaptureWrite(key=key, messages=(), now_ms=1,
                                                        counter_increment=2)])
        with pytest.warns(DeprecationWarning, match=r"stm\.engine\.live_record"):
            assert await stm.live_record(key) == written
        with pytest.warns(DeprecationWarning, match=r"stm\.engine\.server_memories"):
            assert (await stm.server_memories("g")) is await stm.engine.server_memories("g")
        with pytest.warns(DeprecationWarning, match=r"stm\.engine\.servers_settings"):
            both = await stm.servers_settings(["g", "h", "g"])
        assert {sid: s.server_id for sid, s in both.items()} == {"g": "g", "h": "h"}
        turn = Turn(user_id="u", channel_id="c", server_id="g")
        with pytest.warns(DeprecationWarning, match=r"stm\.engine\.mark_tool_used"):
            stm.mark_tool_used(turn)
        assert stm.engine.tool_already_used(turn)


def test_record_window_is_record_turn() -> None:
    assert Stm.record_window is Stm.record_turn
