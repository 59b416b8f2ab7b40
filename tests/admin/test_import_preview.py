"""``import_config(..., dry_run=True)`` (docs/admin.md): the fields that would
change, whether shared memories would be cleared, and the configuration that
would be stored; nothing is written."""

from __future__ import annotations

from stm_core.admin.config_preview import changed_fields
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from tests.conftest import OpenStm


def test_changed_fields_names_added_removed_and_nested_fields() -> None:
    before = {"a": 1, "params": {"x": 1, "y": 2}, "gone": 3, "list": [1]}
    after = {"a": 1, "params": {"x": 1, "y": 5}, "new": 4, "list": [1, 2]}
    assert changed_fields(before, after) == ["gone", "list", "new", "params.y"]
    # A section that turns into a plain value (or back) is one change, not a crash.
    assert changed_fields({"p": {"x": 1}}, {"p": None}) == ["p"]
    assert changed_fields({"p": None}, {"p": {"x": 1}}) == ["p"]


async def test_a_dry_run_shows_the_configuration_that_would_be_stored(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await stm.admin.set_categories("g1", ["Goals: g"])
        doc = await stm.admin.export_config("g1")
        doc["categories"] = [{"label": "Mood", "description": "how they feel"}]
        doc["params"]["refresh_cadence"] = 9
        dry = await stm.admin.import_config("g2", doc, dry_run=True)
        assert set(dry) == {"server_id", "dry_run", "would_change", "clears_server_memories",
                            "config"}
        assert (dry["server_id"], dry["dry_run"]) == ("g2", True)
        assert dry["would_change"] == ["categories", "params.refresh_cadence"]
        assert dry["clears_server_memories"] is False  # g2 has no memories to clear
        assert dry["config"]["categories"] == doc["categories"]
        assert dry["config"]["params"]["refresh_cadence"] == 9
        assert dry["config"]["server_id"] == "g2"
        assert (await stm.admin.categories("g2")).is_default  # nothing written


async def test_only_a_server_with_shared_memories_is_warned_they_go(
        open_stm: OpenStm) -> None:
    """New categories clear the server's shared memories: the preview says so
    when there are some, and not on a server that has none."""
    async with open_stm("memory://") as stm:
        doc = await stm.admin.export_config("g1")
        doc["categories"] = [{"label": "Mood", "description": "how they feel"}]
        assert not (await stm.admin.import_config("g1", doc, dry_run=True))[
            "clears_server_memories"]
        await stm.record_turn(
            Turn(user_id="u1", channel_id="c1", server_id="g1", persona_id="p"),
            [HistoryMessage(author_type="user", content="hi", author_id="u1")],
            [PersonaResponse(content="yo", persona_name="Bot", persona_id="p")])
        assert (await stm.admin.import_config("g1", doc, dry_run=True))[
            "clears_server_memories"]
        doc["categories"] = (await stm.admin.export_config("g1"))["categories"]
        assert not (await stm.admin.import_config("g1", doc, dry_run=True))[
            "clears_server_memories"]  # the categories stay: nothing is cleared
