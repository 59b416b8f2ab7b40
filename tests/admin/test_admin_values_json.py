"""The JSON the admin values give (``to_dict``), field by field.

``stm --json`` prints these and a host may store or forward them, so each
value's keys and the values under them are pinned (docs/admin.md, "Values"),
and each goes through ``json.dumps`` unchanged: plain JSON types only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stm_core.admin import Admin
from stm_core.models import CrudeMessage
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from tests.conftest import OpenStm

G = "g1"
SHARED = {"scope_kind": "server", "server_id": G, "user_id": "", "channel_id": "c1",
          "persona_id": ""}
EDITORS_COPY = {**SHARED, "scope_kind": "user", "user_id": "u1"}


def as_json(value: Any) -> Any:
    data = value.to_dict()
    assert json.loads(json.dumps(data)) == data  # plain JSON types, nothing lost
    return data


@pytest.fixture
async def admin(open_stm: OpenStm) -> AsyncIterator[Admin]:
    async with open_stm("memory://") as store:
        yield store.admin


async def test_server_params_json_names_values_defaults_and_labels(admin: Admin) -> None:
    await admin.set_server_params(G, refresh_cadence=3, cache_policy="stable")
    assert as_json(await admin.server_params(G)) == {
        "server_id": G, "refresh_cadence": 3, "render_mode": "crude_summary",
        "crude_message_count": 6, "nudge_injection_depth": 2, "content_injection_depth": -1,
        "cache_policy": "stable", "prompt_budget_tokens": 2000,
        "defaults": ["content_injection_depth", "crude_message_count",
                     "nudge_injection_depth", "prompt_budget_tokens", "render_mode"],
        "labels": {"refresh_cadence": "every 3 turns", "render_mode": "crude_summary",
                   "crude_message_count": "6 messages",
                   "nudge_injection_depth": "before the last 2 turns",
                   "content_injection_depth": "anchored (default)",
                   "cache_policy": "prompt-cache stable",
                   "prompt_budget_tokens": "2000 tokens"},
        "unavailable": {}}


async def test_prompts_json_gives_each_text_and_whether_it_is_the_default(
        admin: Admin) -> None:
    data = as_json(await admin.set_prompts(G, nudge="Refresh it."))
    assert data["nudge"] == {"text": "Refresh it.", "is_default": False}
    assert data["tool_description"]["is_default"] is True
    assert data["tool_description"]["text"].startswith("Update your short-term working memory")
    assert set(data) == {"server_id", "mode", "tool_description", "nudge"}
    assert (data["server_id"], data["mode"]) == (G, "summary")


async def test_categories_json_lists_position_label_description_and_slug(
        admin: Admin) -> None:
    await admin.edit_memory(channel_id="c1", server_id=G, summary="a shared memory")
    assert as_json(await admin.set_categories(G, ["Goals: what they want",
                                                  "Mood: how they feel"])) == {
        "server_id": G, "mode": "category", "is_default": False,
        "categories": [
            {"position": 0, "label": "Goals", "description": "what they want", "slug": "goals"},
            {"position": 1, "label": "Mood", "description": "how they feel", "slug": "mood"}],
        "cleared_memories": 1}
    assert as_json(await admin.reset_categories(G))["is_default"] is True


async def test_privacy_capability_and_opt_in_json(admin: Admin) -> None:
    await admin.set_private_channels(G, channel_ids=["c9", "c2"])
    assert as_json(await admin.set_privacy_bypass(G, bypass=True)) == {
        "server_id": G, "private_channel_ids": ["c2", "c9"], "privacy_bypass": True}
    assert as_json(await admin.capability(G)) == {
        "server_id": G, "stm_enabled": True, "is_default": True}
    assert as_json(await admin.set_stm_enabled(G, enabled=False)) == {
        "server_id": G, "stm_enabled": False, "is_default": False}
    assert as_json(await admin.set_user_opt_in("u1", opt_in=True)) == {
        "user_id": "u1", "crossserver_opt_in": True}


async def test_memory_edit_json_has_the_snapshot_and_both_keys_written(
        admin: Admin, clock: Any) -> None:
    await admin.set_categories(G, ["Goals: what they want"])
    data = as_json(await admin.edit_memory(channel_id="c1", server_id=G, user_id="u1",
                                           categories={"goals": "ship it"}))
    assert data == {
        "snapshot": {"key": SHARED, "scope": "server", "mode": "category", "exists": True,
                     "is_empty": False, "expired": False,
                     "sections": [{"slug": "goals", "label": "Goals", "text": "ship it"}],
                     "text": "Goals:\nship it", "truncated": False, "turns_since_refresh": 0,
                     "updated_at_ms": clock.now_ms(), "messages": []},
        "keys": [SHARED, EDITORS_COPY], "truncated": [], "cleared": False}
    cut = as_json(await admin.edit_memory(channel_id="c1", server_id=G,
                                          categories={"goals": "x" * 100_000}))
    assert cut["truncated"] == ["goals"]


async def test_snapshot_json_lists_the_stored_lines(open_stm: OpenStm, clock: Any) -> None:
    async with open_stm("memory://") as stm:
        await stored_lines(stm)
        data = as_json(await stm.admin.view_memory(channel_id="c1", server_id=G))
    assert data["messages"] == [{"role": "user", "content": "hello there",
                                 "speaker_name": "Alice", "timestamp_ms": clock.now_ms(),
                                 "author_id": "u7"}]
    assert (data["exists"], data["is_empty"]) == (True, True)


async def test_persona_and_clear_json(open_stm: OpenStm, clock: Any) -> None:
    async with open_stm("memory://") as stm:
        await stored_lines(stm)
        [persona] = await stm.admin.list_personas(channel_id="c1", server_id=G)
        assert as_json(persona) == {"persona_id": "", "content": "lines",
                                    "updated_at_ms": clock.now_ms(), "channel_id": "c1",
                                    "lines": 1}
        assert as_json(await stm.admin.clear_channel("c1")) == {"removed": 1,
                                                                "keys": [SHARED]}


async def stored_lines(stm: Stm) -> None:
    now = stm.clock.now_ms()
    line = CrudeMessage(role="user", content="hello there", speaker_name="Alice",
                        timestamp_ms=now, author_id="u7")
    await stm.engine.capture([CaptureWrite(key=MemoryKey.server(G, "c1", ""), messages=(line,),
                                    now_ms=now)])
