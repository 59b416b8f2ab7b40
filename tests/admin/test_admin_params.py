"""Server parameters: effective values, ranges, friendly labels, cache refresh."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.admin import param_label
from stm_core.admin.params import PARAM_NAMES
from stm_core.errors import ValidationError
from stm_core.store import Stm

SERVER = "g1"


async def test_show_fills_defaults_and_names_them(stm: Stm) -> None:
    params = await stm.admin.server_params(SERVER)
    assert (params.refresh_cadence, params.render_mode, params.crude_message_count,
            params.nudge_injection_depth, params.content_injection_depth) == (
        5, "crude_summary", stm.settings.default_crude_message_count, 2, -1)
    assert params.defaults == {"refresh_cadence", "render_mode", "crude_message_count",
                               "nudge_injection_depth", "content_injection_depth",
                               "cache_policy", "prompt_budget_tokens"}
    assert params.cache_policy == "freshness"
    assert params.prompt_budget_tokens == stm.settings.prompt_budget_tokens == 2000
    assert params.labels["content_injection_depth"] == "anchored (default)"
    # Showing writes nothing.
    stored = await stm.adapter.load_server_settings(SERVER)
    assert stored.refresh_cadence is None and stored.updated_at_ms == 0


async def test_set_subset_keeps_the_rest_and_refreshes_the_cache(stm: Stm) -> None:
    await stm.engine.server_settings(SERVER)  # warm the cache first
    params = await stm.admin.set_server_params(SERVER, refresh_cadence=1,
                                               render_mode="supersede")
    assert params.refresh_cadence == 1 and params.render_mode == "supersede"
    assert params.defaults == {"crude_message_count", "nudge_injection_depth",
                               "content_injection_depth", "cache_policy",
                               "prompt_budget_tokens"}
    assert params.labels["refresh_cadence"] == "every turn"

    params = await stm.admin.set_server_params(SERVER, crude_message_count=10,
                                               nudge_injection_depth=0,
                                               content_injection_depth=20)
    assert params.refresh_cadence == 1, "an earlier value is kept"
    assert params.labels["nudge_injection_depth"] == "tail"
    stored = await stm.adapter.load_server_settings(SERVER)
    assert (stored.refresh_cadence, stored.render_mode, stored.crude_message_count,
            stored.nudge_injection_depth, stored.content_injection_depth) == (
        1, "supersede", 10, 0, 20)
    assert stm.cache.settings.peek(SERVER) == stored
    profile = await stm.engine.profile_for(SERVER)
    assert profile.refresh_cadence == 1 and profile.render_mode.key == "supersede"
    assert profile.nudge_injection_depth == 0 and profile.content_injection_depth == 20


async def test_range_edges_are_accepted(stm: Stm) -> None:
    low = await stm.admin.set_server_params(SERVER, refresh_cadence=1, crude_message_count=1,
                                            nudge_injection_depth=0,
                                            content_injection_depth=-1)
    assert low.content_injection_depth == -1
    high = await stm.admin.set_server_params(
        SERVER, refresh_cadence=100, crude_message_count=stm.settings.max_messages_per_channel,
        nudge_injection_depth=20, content_injection_depth=20)
    assert high.refresh_cadence == 100


@pytest.mark.parametrize(("changes", "field"), [
    ({"refresh_cadence": 0}, "refresh_cadence"),
    ({"refresh_cadence": 101}, "refresh_cadence"),
    ({"crude_message_count": 0}, "crude_message_count"),
    ({"crude_message_count": 11}, "crude_message_count"),
    ({"nudge_injection_depth": -1}, "nudge_injection_depth"),
    ({"nudge_injection_depth": 21}, "nudge_injection_depth"),
    ({"content_injection_depth": -2}, "content_injection_depth"),
    ({"content_injection_depth": 21}, "content_injection_depth"),
    ({"render_mode": "sideways"}, "render_mode"),
    ({"cache_policy": "warm"}, "cache_policy"),
    ({"cache_policy": ""}, "cache_policy"),
    ({"cache_policy": 1}, "cache_policy"),
    ({"cache_policy": ["stable"]}, "cache_policy"),
    ({"prompt_budget_tokens": -1}, "prompt_budget_tokens"),
    ({"prompt_budget_tokens": 1_000_001}, "prompt_budget_tokens"),
    ({"prompt_budget_tokens": 2.5}, "prompt_budget_tokens"),
    ({"prompt_budget_tokens": "800"}, "prompt_budget_tokens"),
    ({"refresh_cadence": True}, "refresh_cadence"),
    ({"refresh_cadence": "5"}, "refresh_cadence"),
    # A good value beside a bad one: nothing at all is written.
    ({"refresh_cadence": 3, "nudge_injection_depth": 99}, "nudge_injection_depth"),
])
async def test_bad_values_are_refused_and_nothing_is_written(
        stm: Stm, changes: dict[str, Any], field: str) -> None:
    before = await stm.adapter.load_server_settings(SERVER)
    with pytest.raises(ValidationError) as info:
        await stm.admin.set_server_params(SERVER, **changes)
    assert info.value.field == field
    assert info.value.allowed
    assert await stm.adapter.load_server_settings(SERVER) == before


async def test_setting_no_parameter_writes_nothing_and_shows_the_current_ones(
        stm: Stm) -> None:
    await stm.admin.set_server_params(SERVER, refresh_cadence=9)
    before = await stm.adapter.load_server_settings(SERVER)
    shown = await stm.admin.set_server_params(SERVER)
    assert shown == await stm.admin.server_params(SERVER) and shown.refresh_cadence == 9
    assert await stm.adapter.load_server_settings(SERVER) == before


async def test_render_mode_error_lists_registered_modes(stm: Stm) -> None:
    with pytest.raises(ValidationError, match="crude_summary, supersede"):
        await stm.admin.set_server_params(SERVER, render_mode="nope")


async def test_reset_returns_to_defaults(stm: Stm) -> None:
    await stm.admin.set_server_params(SERVER, refresh_cadence=9, nudge_injection_depth=4)
    params = await stm.admin.reset_server_params(SERVER, names=["refresh_cadence"])
    assert params.refresh_cadence == 5 and params.nudge_injection_depth == 4
    params = await stm.admin.reset_server_params(SERVER)
    assert params.nudge_injection_depth == 2 and params.defaults == set(PARAM_NAMES)
    with pytest.raises(ValidationError):
        await stm.admin.reset_server_params(SERVER, names=["cadence"])


async def test_bad_server_id_is_refused(stm: Stm) -> None:
    for bad in ("", "a b", "x" * 129):
        with pytest.raises(ValidationError):
            await stm.admin.server_params(bad)


def test_friendly_labels() -> None:
    assert param_label("refresh_cadence", 1) == "every turn"
    assert param_label("refresh_cadence", 5) == "every 5 turns"
    assert param_label("nudge_injection_depth", 0) == "tail"
    assert param_label("nudge_injection_depth", 2) == "before the last 2 turns"
    assert param_label("content_injection_depth", -1) == "anchored (default)"
    assert param_label("content_injection_depth", 0) == "tail"



def test_the_other_documented_labels() -> None:
    assert param_label("crude_message_count", 1) == "1 message"
    assert param_label("crude_message_count", 6) == "6 messages"
    assert param_label("nudge_injection_depth", 1) == "before the last turn"
    assert param_label("content_injection_depth", 1) == "before the last turn"
    assert param_label("content_injection_depth", 3) == "before the last 3 turns"
    assert param_label("prompt_budget_tokens", 0) == "no budget"
    assert param_label("prompt_budget_tokens", 800) == "800 tokens"
    assert param_label("cache_policy", "stable") == "prompt-cache stable"
    assert param_label("cache_policy", "freshness") == "fresh ages and placement (default)"


async def test_prompt_budget_edges_are_accepted(stm: Stm) -> None:
    for edge in (0, 1_000_000):
        params = await stm.admin.set_server_params(SERVER, prompt_budget_tokens=edge)
        assert params.prompt_budget_tokens == edge
        assert (await stm.adapter.load_server_settings(SERVER)).prompt_budget_tokens == edge

async def test_cache_policy_is_stored_shown_and_reaches_the_profile(stm: Stm) -> None:
    await stm.engine.profile_for(SERVER)  # warm the cache first
    params = await stm.admin.set_server_params(SERVER, cache_policy="stable")
    assert params.cache_policy == "stable" and "cache_policy" not in params.defaults
    assert params.to_dict()["cache_policy"] == "stable"
    assert params.labels["cache_policy"] == "prompt-cache stable"
    assert (await stm.adapter.load_server_settings(SERVER)).cache_policy == "stable"
    assert (await stm.engine.profile_for(SERVER)).stable
    params = await stm.admin.reset_server_params(SERVER, names=["cache_policy"])
    assert params.cache_policy == "freshness" and "cache_policy" in params.defaults
    assert not (await stm.engine.profile_for(SERVER)).stable
async def test_stored_render_mode_without_its_plugin_reports_the_one_in_effect(
        stm: Stm) -> None:
    # Written while a plugin registering "fancy" was installed; it is not any more.
    await stm.adapter.update_server_settings(SERVER, {"render_mode": "fancy"},
                                             now_ms=stm.clock.now_ms())
    params = await stm.admin.server_params(SERVER)
    assert params.render_mode == "crude_summary"
    assert params.unavailable == {"render_mode": "fancy"}
    assert "render_mode" in params.defaults
    assert params.to_dict()["unavailable"] == {"render_mode": "fancy"}
    assert (await stm.engine.profile_for(SERVER)).render_mode.key == params.render_mode
    # Choosing an installed mode clears the mark.
    params = await stm.admin.set_server_params(SERVER, render_mode="supersede")
    assert params.render_mode == "supersede" and params.unavailable == {}
