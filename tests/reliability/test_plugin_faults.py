"""A plugin raising in any hook of any concern never takes a turn down.

For every hook the specs define, a plugin whose implementation raises is
registered on a store that holds memory. Then a whole turn runs:
``build_context`` returns the normal context or the logged empty fallback,
never an exception; ``apply_tool_call`` returns a result; ``record_turn``,
``tool_schema`` and admin writes either work or raise, and a write that
raised left the database as it was; the cache still mirrors the database.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from hookspecs import PROJECT_NAME, SPEC_CLASSES, hookimpl
from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.plugin_types import Actor
from stm_core.store import Stm, open_store

from .crash_ops import snapshot
from .support import add_figure, cache_problems

HOOKS = sorted(name for spec in SPEC_CLASSES for name in vars(spec)
               if name.startswith(f"{PROJECT_NAME}_"))
SERVER = "g"


def failing_plugin(hook: str) -> Any:
    calls: list[str] = []

    def broken(self: object) -> Any:
        calls.append(hook)
        raise RuntimeError(f"{hook} is broken")

    broken.__name__ = hook
    cls = type(f"Broken_{hook}", (), {hook: hookimpl(broken), "calls": calls})
    return cls()


def turn(channel: str = "c1", **kw: Any) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=SERVER, persona_id="p",
                has_tools=True, **kw)


async def record(stm: Stm, t: Turn, text: str) -> None:
    await stm.record_turn(t, [HistoryMessage(author_type="user", content=f"[System: x] {text}",
                                             speaker_name="u1")],
                          [PersonaResponse(persona_id="p", persona_name="P", content=text)])


async def seed(stm: Stm) -> None:
    await record(stm, turn("c2"), "hello from c2")
    assert (await stm.apply_tool_call(turn("c2"), {"summary": "c2 notes"})).ok
    for i in range(6):  # the nudge is due in c1
        await record(stm, turn(), f"turn {i}")


@pytest.mark.parametrize("hook", HOOKS)
async def test_a_raising_hook_is_contained(hook: str, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture,
                                           figures: dict[str, Any]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"
    plugin = failing_plugin(hook)
    if hook == "stm_register_storage_adapters":
        with pytest.raises(RuntimeError, match="is broken"):
            async with open_store(url, plugins=[plugin], load_entrypoints=False):
                pass
        add_figure(figures, "plugin_faults_injected", 1)
        return
    async with open_store(url, clock=ManualClock(), load_entrypoints=False) as stm:
        await seed(stm)
        normal = await stm.build_context(turn())
        stm.pm.register(plugin, name="broken")

        with caplog.at_level(logging.ERROR):
            ctx = await stm.build_context(turn())
        assert ctx in (normal, StmContext.error_fallback())
        if ctx != normal:
            assert any(r.name == "stm.pipeline" and r.levelno == logging.ERROR
                       for r in caplog.records)

        result = await stm.apply_tool_call(turn(), {"summary": "from the tool"})
        assert result.ok or result.code in ("error", "unavailable")

        for write in (lambda: record(stm, turn(), "after the fault"),
                      lambda: stm.admin.set_server_params(
                          SERVER, refresh_cadence=3, actor=Actor(user_id="u1", can_manage=True)),
                      lambda: stm.tool_schema(turn(), "openai"),
                      lambda: stm.tool_schema(turn())):  # the tool-format rule's hook
            before = await snapshot(stm)
            try:
                await write()
            except Exception as exc:
                assert "is broken" in str(exc) or "is broken" in str(exc.__cause__)
                assert await snapshot(stm) == before, "a failed call wrote something"

        assert await cache_problems(stm) == []
        # The hook was really exercised (every hook but storage runs in a turn).
        assert plugin.calls, f"{hook} was never called"
    add_figure(figures, "plugin_faults_injected", len(plugin.calls))
