"""Prompt overrides: defaults per mode, limits, refused template syntax, reset."""

from __future__ import annotations

import pytest

from stm_core.errors import ValidationError
from stm_core.store import Stm

SERVER = "g1"


async def test_defaults_follow_the_mode(stm: Stm) -> None:
    prompts = await stm.admin.prompts(SERVER)
    assert prompts.mode == "summary"
    assert prompts.nudge.is_default and prompts.tool_description.is_default
    assert prompts.nudge.text == stm.hooks.nudge_template("", "summary")
    assert "{category_labels}" not in prompts.nudge.text

    await stm.admin.set_categories(SERVER, "Goals: what we want\nMood: how it feels")
    prompts = await stm.admin.prompts(SERVER)
    assert prompts.mode == "category"
    assert prompts.nudge.text == stm.hooks.nudge_template("", "category")
    assert "{category_labels}" in prompts.nudge.text
    assert prompts.tool_description.text == stm.hooks.tool_description("", "category")


async def test_set_trims_stores_and_refreshes_cache(stm: Stm) -> None:
    await stm.engine.server_settings(SERVER)
    prompts = await stm.admin.set_prompts(
        SERVER, nudge="  [System: refresh {short_term_memory_tool}]\n")
    assert prompts.nudge.text == "[System: refresh {short_term_memory_tool}]"
    assert not prompts.nudge.is_default and prompts.tool_description.is_default
    stored = await stm.adapter.load_server_settings(SERVER)
    assert stored.update_nudge_override == "[System: refresh {short_term_memory_tool}]"
    assert stored.tool_description_override is None
    assert stm.cache.settings.peek(SERVER) == stored

    prompts = await stm.admin.set_prompts(SERVER, tool_description="Keep notes.")
    assert prompts.tool_description.text == "Keep notes."
    assert not prompts.nudge.is_default, "the nudge was left as it was"


async def test_blank_text_resets_to_default(stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="custom", tool_description="custom too")
    prompts = await stm.admin.set_prompts(SERVER, nudge="   \n ")
    assert prompts.nudge.is_default and not prompts.tool_description.is_default
    assert (await stm.adapter.load_server_settings(SERVER)).update_nudge_override is None


async def test_reset_one_or_both(stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="n", tool_description="d")
    prompts = await stm.admin.reset_prompts(SERVER, nudge=False)
    assert prompts.tool_description.is_default and not prompts.nudge.is_default
    prompts = await stm.admin.reset_prompts(SERVER)
    assert prompts.tool_description.is_default and prompts.nudge.is_default


async def test_reset_stores_no_override_at_all(stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="n", tool_description="d")
    await stm.admin.reset_prompts(SERVER)
    stored = await stm.adapter.load_server_settings(SERVER)
    assert stored.tool_description_override is None and stored.update_nudge_override is None


async def test_reset_of_neither_prompt_changes_nothing_and_shows_both(stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="n")
    before = await stm.adapter.load_server_settings(SERVER)
    prompts = await stm.admin.reset_prompts(SERVER, tool_description=False, nudge=False)
    assert prompts.nudge.text == "n" and prompts.tool_description.is_default
    assert await stm.adapter.load_server_settings(SERVER) == before


async def test_setting_no_prompt_writes_nothing_and_shows_the_current_ones(
        stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="n")
    before = await stm.adapter.load_server_settings(SERVER)
    prompts = await stm.admin.set_prompts(SERVER)
    assert prompts.nudge.text == "n" and prompts.tool_description.is_default
    assert await stm.adapter.load_server_settings(SERVER) == before


@pytest.mark.parametrize("text", ["{0.__class__}", "hi {x[0]}", "{x!r}", "{x:>99999}",
                                  "{user.__init__.__globals__}"])
async def test_format_syntax_is_stored_as_typed(stm: Stm, text: str) -> None:
    prompts = await stm.admin.set_prompts(SERVER, tool_description="fine", nudge=text)
    assert prompts.nudge.text == text
    assert (await stm.adapter.load_server_settings(SERVER)).update_nudge_override == text


async def test_length_limit(stm: Stm) -> None:
    await stm.admin.set_prompts(SERVER, nudge="x" * 4000)
    with pytest.raises(ValidationError, match="at most 4000"):
        await stm.admin.set_prompts(SERVER, tool_description="y" * 4001)
    assert (await stm.adapter.load_server_settings(SERVER)).tool_description_override is None


async def test_plain_placeholders_and_json_pass(stm: Stm) -> None:
    text = 'Use {short_term_memory_tool}; fields {category_labels}; json {"a": 1}'
    prompts = await stm.admin.set_prompts(SERVER, nudge=text)
    assert prompts.nudge.text == text
