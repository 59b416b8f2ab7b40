"""The host's long-term-memory tools: named in the default texts only when the
host has them (DESIGN decision 15)."""

from __future__ import annotations

import pytest

from stm_core.errors import ConfigurationError
from stm_core.settings import Settings
from stm_core.store import Stm

from .support import QUEST, OpenStm, capture, make_turn, server_key, set_categories

LONG_TERM_SENTENCE = ("Do not use `update_short_term_memory` when the user explicitly asks "
                      "you to remember, save or store something for future conversations;")


async def nudge_and_description(stm: Stm) -> tuple[str, str]:
    await capture(stm, server_key(QUEST), counter_increment=5)
    turn = make_turn()
    ctx = await stm.build_context(turn)
    schema = await stm.tool_schema(turn)
    assert ctx.nudge_item is not None and schema is not None
    return ctx.nudge_item.text, schema["function"]["description"]


async def test_no_tool_configured_no_sentence(stm: Stm) -> None:
    nudge, description = await nudge_and_description(stm)
    assert "long_term" not in nudge + description and "long-term" not in nudge + description
    assert nudge.endswith("for this conversation.]")
    assert description.endswith("but not permanently.")


@pytest.mark.parametrize(("tools", "named"), [
    ({"long_term_memory_tool": "save_note"}, "`save_note` is for that."),
    ({"long_term_memory_tool": "save_note", "long_term_memory_update_tool": "edit_note"},
     "`save_note` or `edit_note` is for that."),
    ({"long_term_memory_update_tool": "edit_note"}, "`edit_note` is for that."),
])
async def test_configured_tools_are_named(open_stm: OpenStm, backend_url: str,
                                          tools: dict[str, str], named: str) -> None:
    async with open_stm(backend_url, settings=Settings(**tools)) as stm:
        nudge, description = await nudge_and_description(stm)
    assert nudge.endswith(f" {LONG_TERM_SENTENCE} {named}]")
    assert description.endswith(f"use {named.removesuffix(' is for that.')} for that.")


async def test_category_mode_nudge_names_them_too(open_stm: OpenStm, backend_url: str) -> None:
    async with open_stm(backend_url,
                        settings=Settings(long_term_memory_tool="remember")) as stm:
        await set_categories(stm, ["Goals"])
        nudge, _ = await nudge_and_description(stm)
    assert nudge.endswith("fields: Goals. " + LONG_TERM_SENTENCE + " `remember` is for that.]")


async def test_a_macro_plugin_counts_as_configured(open_stm: OpenStm, backend_url: str) -> None:
    from hookspecs import hookimpl

    class Notes:
        @hookimpl
        def stm_prompt_macros(self) -> dict[str, str]:
            return {"memory_tool": "`jot`"}

    async with open_stm(backend_url, plugins=[Notes()]) as stm:
        nudge, description = await nudge_and_description(stm)
    assert nudge.endswith("`jot` is for that.]") and description.endswith("use `jot` for that.")


def test_tool_names_come_from_the_environment() -> None:
    settings = Settings.from_env({"STM_LONG_TERM_MEMORY_TOOL": "save_note",
                                  "STM_LONG_TERM_MEMORY_UPDATE_TOOL": "edit-note"})
    assert (settings.long_term_memory_tool, settings.long_term_memory_update_tool) == (
        "save_note", "edit-note")


@pytest.mark.parametrize("name", ["", "two words", "x" * 65, "{memory_tool}", "note`s"])
def test_a_bad_tool_name_is_a_configuration_error(name: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^STM_LONG_TERM_MEMORY_TOOL="):
        Settings(long_term_memory_tool=name)
    with pytest.raises(ConfigurationError, match=r"^STM_LONG_TERM_MEMORY_UPDATE_TOOL="):
        Settings.from_env({"STM_LONG_TERM_MEMORY_UPDATE_TOOL": name + "!"})
