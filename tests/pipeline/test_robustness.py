"""No user, the error fallback, and the warm path making no storage call."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, cast

import pytest
from stm_core.plugin_types import VisibilityContext, VisibilityPolicy

from hookspecs import hookimpl
from stm_core.models import StmContext
from stm_core.storage.protocol import StorageAdapter
from stm_core.storage.records import MemoryRecord
from stm_core.store import Stm

from .support import (
    ART,
    QUEST,
    capture,
    make_turn,
    server_key,
    set_categories,
    set_opt_in,
    set_settings,
    user_key,
    write,
)


async def test_no_triggering_user_gives_the_defaults(stm: Stm) -> None:
    await write(stm, server_key(ART), summary="mural")
    await capture(stm, server_key(QUEST), counter_increment=9)
    ctx = await stm.build_context(make_turn(user_id=None))
    assert ctx == StmContext(memory_items=(), nudge_item=None, nudge_injection_depth=2,
                             memory_injection_depth=-1)


class BrokenPolicy:
    @hookimpl
    def stm_visibility_policies(self) -> Iterable[VisibilityPolicy]:
        def explode(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
            raise RuntimeError("policy bug")
        return [explode]


async def test_a_failing_plugin_gives_the_fallback_and_a_log_record(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    await write(stm, server_key(ART), summary="mural")
    stm.pm.register(BrokenPolicy(), name="broken")
    with caplog.at_level(logging.ERROR, logger="stm.pipeline"):
        ctx = await stm.build_context(make_turn())
    assert ctx == StmContext.error_fallback()
    assert ctx.nudge_injection_depth == 0 and ctx.memory_injection_depth == -1
    [record] = [r for r in caplog.records if r.name == "stm.pipeline"]
    assert record.exc_info is not None and "policy bug" in str(record.exc_info[1])


class CountingAdapter:
    """Delegates every call to a real adapter and records the method names."""

    def __init__(self, inner: StorageAdapter) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)
        return counted


def counting(stm: Stm) -> CountingAdapter:
    proxy = CountingAdapter(stm.adapter)
    stm.adapter = cast(StorageAdapter, proxy)
    return proxy


async def test_a_warm_build_makes_no_storage_call(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await set_settings(stm, private_channel_ids=["700"])
    await set_settings(stm, "H", private_channel_ids=["901"])
    await set_opt_in(stm)
    await write(stm, server_key(ART), summary="mural")
    await write(stm, server_key("700"), summary="private")
    await write(stm, server_key(QUEST, persona="p1"), categories={"goals": "exit"})
    await capture(stm, server_key(QUEST, persona="p1"), counter_increment=5)
    await write(stm, user_key("901", server="H"), summary="H private")
    await write(stm, user_key("902", server="H"), summary="H public")
    await write(stm, user_key("dm-2"), summary="an older DM")
    proxy = counting(stm)
    turns = [
        make_turn(persona_id="p1"),                       # guild, row exists, nudge due
        make_turn(persona_id="p2"),                       # guild, no row for this persona
        make_turn(server_id=None, channel_id="dm-1"),     # DM with opt-in
    ]
    cold: list[StmContext] = []
    for turn in turns:
        cold.append(await stm.build_context(turn))
    assert proxy.calls, "the first builds load from storage"
    proxy.calls.clear()

    warm: list[StmContext] = []
    for turn in turns:
        warm.append(await stm.build_context(turn))
    assert proxy.calls == []
    assert warm == cold
    assert cold[0].nudge_item is not None and len(cold[0].memory_items) == 2


async def test_writes_reach_the_next_build_without_a_storage_read(stm: Stm) -> None:
    turn = make_turn()
    await stm.build_context(turn)
    proxy = counting(stm)
    await write(stm, server_key(ART), summary="new mural")
    await capture(stm, server_key(QUEST), counter_increment=5)
    proxy.calls.clear()
    ctx = await stm.build_context(turn)
    assert proxy.calls == []
    assert "new mural" in ctx.memory_items[0].text and ctx.nudge_item is not None


