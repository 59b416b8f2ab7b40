"""Export and import of a server's configuration."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from stm_core.admin import FORMAT_NAME, FORMAT_VERSION
from stm_core.errors import ValidationError
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm

from .helpers import seed_summary


async def configure(stm: Stm, server_id: str) -> None:
    # Every parameter and prompt away from its default, so each must travel.
    await stm.admin.set_server_params(server_id, refresh_cadence=3, render_mode="supersede",
                                      crude_message_count=9, nudge_injection_depth=4,
                                      content_injection_depth=0, cache_policy="stable",
                                      prompt_budget_tokens=1500)
    await stm.admin.set_prompts(server_id, nudge="[System: refresh {category_labels}]",
                                tool_description="Keep notes on {category_labels}.")
    await stm.admin.set_categories(server_id, ["Goals: where to go", "Mood: how it feels"])
    await stm.admin.set_stm_enabled(server_id, enabled=False)
    await stm.admin.set_private_channels(server_id, channel_ids=["c9", "c8"])
    await stm.admin.set_privacy_bypass(server_id, bypass=True)


async def test_round_trip_to_another_server(stm: Stm) -> None:
    await configure(stm, "g1")
    await seed_summary(stm, MemoryKey.server("g1", "c1", "p1"), "per-channel memory")
    exported = await stm.admin.export_config("g1")
    assert exported["format"] == FORMAT_NAME and exported["version"] == FORMAT_VERSION
    assert "memories" not in json.dumps(exported)
    assert "per-channel memory" not in json.dumps(exported)
    document = json.loads(json.dumps(exported))  # really JSON-able

    imported = await stm.admin.import_config("g2", document)
    assert {k: v for k, v in imported.items() if k != "server_id"} == {
        k: v for k, v in exported.items() if k != "server_id"}
    source = await stm.adapter.load_server_settings("g1")
    target = await stm.adapter.load_server_settings("g2")
    assert source.crude_message_count == 9 and source.tool_description_override
    for field in ("refresh_cadence", "render_mode", "crude_message_count",
                  "nudge_injection_depth", "content_injection_depth", "cache_policy",
                  "prompt_budget_tokens", "tool_description_override", "update_nudge_override",
                  "stm_enabled", "private_channel_ids", "privacy_bypass", "categories"):
        assert getattr(target, field) == getattr(source, field), field
    assert stm.cache.settings.peek("g2") == target
    assert (await stm.engine.profile_for("g2")).mode == "category"


async def test_import_resets_what_the_document_leaves_default(stm: Stm) -> None:
    await configure(stm, "g1")
    await seed_summary(stm, MemoryKey.server("g1", "c1", "p1"), "cleared with categories")
    await stm.admin.import_config("g1", {"format": FORMAT_NAME, "version": FORMAT_VERSION})
    stored = await stm.adapter.load_server_settings("g1")
    assert stored.refresh_cadence is None and stored.update_nudge_override is None
    assert stored.cache_policy is None
    assert stored.categories == () and stored.stm_enabled is None
    assert stored.private_channel_ids == frozenset() and not stored.privacy_bypass
    assert await stm.adapter.get_memory(MemoryKey.server("g1", "c1", "p1")) is None


async def test_same_categories_keep_server_memories(stm: Stm) -> None:
    await configure(stm, "g1")
    key = MemoryKey.server("g1", "c1", "p1")
    await seed_summary(stm, key, "kept")
    exported = await stm.admin.export_config("g1")
    exported["params"]["refresh_cadence"] = 7
    await stm.admin.import_config("g1", exported)
    assert await stm.adapter.get_memory(key) is not None
    assert (await stm.admin.server_params("g1")).refresh_cadence == 7


def broken(change: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": FORMAT_NAME, "version": FORMAT_VERSION, "server_id": "g1",
        "params": {"refresh_cadence": 3}, "prompts": {"nudge": None},
        "categories": [{"label": "Goals", "description": "g"}],
        "stm_enabled": True, "privacy": {"private_channel_ids": ["c1"], "bypass": False}}
    bad = copy.deepcopy(doc)
    if change == "extra top key":
        bad["memories"] = []
    elif change == "extra nested key":
        bad["params"]["cadence"] = 3
    elif change == "string for int":
        bad["params"]["refresh_cadence"] = "3"
    elif change == "bool for int":
        bad["params"]["refresh_cadence"] = True
    elif change == "out of range":
        bad["params"]["nudge_injection_depth"] = 21
    elif change == "unknown render mode":
        bad["params"]["render_mode"] = "sideways"
    elif change == "unknown cache policy":
        bad["params"]["cache_policy"] = "warm"
    elif change == "number for cache policy":
        bad["params"]["cache_policy"] = 1
    elif change == "prompt not text":
        bad["prompts"]["nudge"] = 5
    elif change == "duplicate category":
        bad["categories"].append({"label": "goals", "description": "again"})
    elif change == "too many categories":
        bad["categories"] = [{"label": f"C{i}", "description": "d"} for i in range(6)]
    elif change == "bad channel id":
        bad["privacy"]["private_channel_ids"] = [""]
    elif change == "wrong version":
        bad["version"] = 99
    elif change == "wrong format":
        bad["format"] = "something-else"
    elif change == "not an object":
        return ["format"]  # type: ignore[return-value]
    return bad


@pytest.mark.parametrize("change", [
    "extra top key", "extra nested key", "string for int", "bool for int", "out of range",
    "unknown render mode", "unknown cache policy", "number for cache policy",
    "prompt not text", "duplicate category", "too many categories",
    "bad channel id", "wrong version", "wrong format", "not an object"])
async def test_invalid_documents_write_nothing(stm: Stm, change: str) -> None:
    await configure(stm, "g1")
    before = await stm.adapter.load_server_settings("g1")
    with pytest.raises(ValidationError):
        await stm.admin.import_config("g1", broken(change))
    assert await stm.adapter.load_server_settings("g1") == before


async def test_unknown_keys_are_named_with_their_path(stm: Stm) -> None:
    with pytest.raises(ValidationError, match=r"extra fields found \(cadence\) @ \$\.params"):
        await stm.admin.import_config("g1", broken("extra nested key"))


async def test_each_problem_of_a_document_is_named_in_one_message(stm: Stm) -> None:
    with pytest.raises(ValidationError) as info:
        await stm.admin.import_config("g1", ["format"])
    assert str(info.value) == "a server configuration must be a JSON object"
    doc = broken("extra nested key")
    doc["params"]["refresh_cadence"] = "often"
    with pytest.raises(ValidationError) as info:
        await stm.admin.import_config("g1", doc)
    message = str(info.value)
    assert message.startswith("invalid server configuration: ")
    problems = message.removeprefix("invalid server configuration: ").split("; ")
    assert sorted(problems) == ["extra fields found (cadence) @ $.params",
                                "invalid value for type, expected int | None "
                                "@ $.params.refresh_cadence"]
