"""Modules bound with ``lazy_module`` load once, whatever is imported first."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from stm_core.lazy_import import lazy_module


def test_a_package_cannot_be_bound_lazily() -> None:
    with pytest.raises(ImportError, match="is a package"):
        lazy_module("stm_core.admin")


def test_a_tool_call_before_the_first_admin_call_loads_each_admin_module_once(
        tmp_path: object) -> None:
    """The tool imports a module of the admin package; the admin package binds
    the same module lazily. Whichever comes first, one module object serves
    both (a second copy raised ``ValueError`` on its first use)."""
    code = f"""
        import asyncio, sys
        from stm_core import HistoryMessage, PersonaResponse, Turn, open_store

        async def main():
            async with open_store("sqlite+aiosqlite:///{tmp_path}/stm.db",
                                  load_entrypoints=False) as stm:
                turn = Turn(user_id="u1", channel_id="c1", server_id="g1", persona_id="p1")
                assert (await stm.apply_tool_call(turn, {{"summary": "teal"}})).ok
                await stm.admin.edit_memory(server_id="g1", channel_id="c1",
                                            persona_id="p1", summary="red")
                print((await stm.admin.undo_memory(server_id="g1", channel_id="c1",
                                                  persona_id="p1")).restored_from)
                import stm_core.admin.api as api, stm_core.admin.history as history
                assert api.history is history, "two copies of stm_core.admin.history"

        asyncio.run(main())
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
