"""Persona memory: view the injected row, list personas, hand-edit, clear."""

from __future__ import annotations

import pytest

from stm_core._util.clock import ManualClock
from stm_core.admin.memory import EMPTY_NOTICE, VIEW_MAX_CHARS
from stm_core.errors import ValidationError
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm

from .helpers import seed_categories, seed_summary

SERVER, CHANNEL, PERSONA = "g1", "c1", "p1"


async def test_view_in_a_guild_reads_the_server_shared_row(stm: Stm) -> None:
    await seed_summary(stm, MemoryKey.server(SERVER, CHANNEL, PERSONA), "The party met Bob.")
    await seed_summary(stm, MemoryKey.user("u1", CHANNEL, PERSONA, SERVER), "user copy")
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.scope == "server" and shown.mode == "summary" and shown.exists
    assert shown.text == "The party met Bob."
    assert not shown.is_empty and not shown.truncated and not shown.expired


async def test_view_in_a_dm_reads_the_user_row(stm: Stm) -> None:
    await seed_summary(stm, MemoryKey.user("u1", "dm1", PERSONA, None), "DM notes")
    shown = await stm.admin.view_memory(channel_id="dm1", persona_id=PERSONA, user_id="u1")
    assert shown.scope == "dm" and shown.text == "DM notes"
    with pytest.raises(ValidationError, match="user id"):
        await stm.admin.view_memory(channel_id="dm1", persona_id=PERSONA)


async def test_view_empty_and_truncated(stm: Stm) -> None:
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.is_empty and not shown.exists and shown.text == EMPTY_NOTICE
    assert not shown.truncated
    assert (shown.turns_since_refresh, shown.updated_at_ms, shown.messages) == (0, 0, ())
    await stm.admin.set_categories(SERVER, [f"Cat {i}: d" for i in range(4)])
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    await seed_categories(stm, key, {f"cat_{i}": "y" * 1500 for i in range(4)})
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.truncated
    assert shown.text.endswith("(truncated)")
    assert len(shown.text) < VIEW_MAX_CHARS + 20


async def test_view_category_mode_in_position_order_skipping_blank(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g", "HP/MP: h", "Mood: m"])
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    await seed_categories(stm, key, {"mood": "tense", "goals": "find the exit",
                                     "hp_mp": "  ", "retired": "not configured"})
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.text == "Goals:\nfind the exit\n\nMood:\ntense"
    assert [s.slug for s in shown.sections] == ["goals", "mood"]


async def test_view_shows_the_rows_counter_time_and_lines(stm: Stm, clock: ManualClock) -> None:
    key = MemoryKey.user("u1", "dm1", PERSONA, None)
    await seed_summary(stm, key, " notes ", messages=2, counter=3)
    written_at = clock.now_ms()
    clock.advance(minutes=5)
    shown = await stm.admin.view_memory(channel_id="dm1", persona_id=PERSONA, user_id="u1")
    assert (shown.key, shown.scope, shown.mode, shown.exists) == (key, "dm", "summary", True)
    assert [(s.slug, s.label, s.text) for s in shown.sections] == [("summary", "Summary",
                                                                    "notes")]
    assert (shown.text, shown.truncated, shown.is_empty, shown.expired) == \
        ("notes", False, False, False)
    assert (shown.turns_since_refresh, shown.updated_at_ms) == (3, written_at)
    assert [m.content for m in shown.messages] == ["line 0", "line 1"]


async def test_in_summary_mode_the_summary_wins_and_lone_categories_show_humanised(
        stm: Stm) -> None:
    both, only_categories = (MemoryKey.server(SERVER, CHANNEL, p) for p in ("p1", "p2"))
    await seed_categories(stm, both, {"goals": "stale"})
    await seed_summary(stm, both, "current")
    await seed_categories(stm, only_categories, {"party_status": " resting ", "hp": " "})
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL, persona_id="p1")
    assert shown.text == "current"
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL, persona_id="p2")
    assert [(s.slug, s.label, s.text) for s in shown.sections] == [
        ("party_status", "Party Status", "resting")]
    assert shown.text == "Party Status:\nresting" and shown.mode == "summary"


async def test_in_category_mode_a_row_without_categories_shows_its_summary(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g"])
    await seed_summary(stm, MemoryKey.server(SERVER, CHANNEL, PERSONA), "older summary")
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.mode == "category"
    assert [(s.slug, s.label, s.text) for s in shown.sections] == [
        ("summary", "Summary", "older summary")]
    assert shown.text == "Summary:\nolder summary"


async def test_view_flags_an_expired_row(stm: Stm, clock: ManualClock) -> None:
    await seed_summary(stm, MemoryKey.server(SERVER, CHANNEL, PERSONA), "old")
    clock.advance(hours=25)
    shown = await stm.admin.view_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA)
    assert shown.expired


async def test_list_personas_with_non_blank_memory(stm: Stm) -> None:
    await seed_summary(stm, MemoryKey.server(SERVER, CHANNEL, "p2"), "two")
    await seed_categories(stm, MemoryKey.server(SERVER, CHANNEL, "p1"), {"goals": "g"})
    await seed_summary(stm, MemoryKey.server(SERVER, CHANNEL, "p3"), "   ")
    await seed_summary(stm, MemoryKey.server(SERVER, "other", "p4"), "elsewhere")
    await seed_summary(stm, MemoryKey.user("u1", CHANNEL, "p5", SERVER), "user copy")
    found = await stm.admin.list_personas(server_id=SERVER, channel_id=CHANNEL)
    assert [(p.persona_id, p.mode_hint) for p in found] == [("p1", "categories"),
                                                           ("p2", "summary")]
    await seed_summary(stm, MemoryKey.user("u1", "dm1", "p9", None), "dm")
    found = await stm.admin.list_personas(channel_id="dm1", user_id="u1")
    assert [p.persona_id for p in found] == ["p9"]


async def test_edit_summary_writes_server_and_editor_rows_keeps_counter(stm: Stm) -> None:
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    await seed_summary(stm, key, "before", counter=3)
    await stm.engine.server_memories(SERVER)
    edit = await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL,
                                       persona_id=PERSONA, user_id="u1",
                                       summary="  Alice found {secret} for {user}. ")
    assert edit.keys == (key, MemoryKey.user("u1", CHANNEL, PERSONA, SERVER))
    assert edit.snapshot.text == "Alice found secret for {user}."
    row = await stm.adapter.get_memory(key)
    assert row is not None and row.summary == "Alice found secret for {user}."
    assert row.turns_since_refresh == 3, "an admin edit does not reset the counter"
    user_row = await stm.adapter.get_memory(edit.keys[1])
    assert user_row is not None and user_row.summary == row.summary
    cached = stm.cache.servers.peek(SERVER)
    assert cached is not None and cached.records[key] == row


async def test_edit_summary_is_truncated_like_the_tool(stm: Stm) -> None:
    edit = await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL,
                                       persona_id=PERSONA, summary="z" * 2000)
    assert edit.truncated == ("summary",)
    row = await stm.adapter.get_memory(MemoryKey.server(SERVER, CHANNEL, PERSONA))
    assert row is not None and row.summary == "z" * stm.settings.max_summary_length


async def test_edit_blank_summary_clears_summary_and_messages(stm: Stm) -> None:
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    await seed_summary(stm, key, "to be cleared", messages=3)
    edit = await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL,
                                       persona_id=PERSONA, summary="  ")
    assert edit.cleared and edit.snapshot.is_empty
    row = await stm.adapter.get_memory(key)
    assert row is not None and row.summary is None and row.messages == ()


async def test_edit_categories_by_label_or_slug_replaces_the_set(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g", "HP/MP: h", "Mood: m"])
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    await seed_categories(stm, key, {"goals": "old", "mood": "old"})
    edit = await stm.admin.edit_memory(
        server_id=SERVER, channel_id=CHANNEL, persona_id=PERSONA,
        categories={"HP/MP": " 12/30 ", "goals": "x" * 1600, "Mood": ""})
    row = await stm.adapter.get_memory(key)
    assert row is not None
    assert list(row.categories) == ["goals", "hp_mp"], "position order; blank cleared"
    assert row.categories["hp_mp"] == "12/30"
    assert len(row.categories["goals"]) == stm.settings.max_summary_length
    assert edit.truncated == ("goals",)
    assert [s.label for s in edit.snapshot.sections] == ["Goals", "HP/MP"]


async def test_edit_categories_clears_a_blank_first_field_and_keeps_the_later_ones(
        stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g", "Mood: m"])
    await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL, persona_id=PERSONA,
                                categories={"Goals": " ", "Mood": "calm"})
    row = await stm.adapter.get_memory(MemoryKey.server(SERVER, CHANNEL, PERSONA))
    assert row is not None and dict(row.categories) == {"mood": "calm"}


async def test_edit_categories_finds_a_label_in_any_case_even_where_its_slug_differs(
        stm: Stm) -> None:
    # "STRASSE" folds to "strasse" like "Straße" does, but slugs to another name.
    await stm.admin.set_categories(SERVER, ["Straße: the street"])
    await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL, persona_id=PERSONA,
                                categories={"STRASSE": "Main Street"})
    row = await stm.adapter.get_memory(MemoryKey.server(SERVER, CHANNEL, PERSONA))
    assert row is not None and dict(row.categories) == {"stra_e": "Main Street"}


async def test_edit_refusals_write_nothing(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g"])
    key = MemoryKey.server(SERVER, CHANNEL, PERSONA)
    before = await seed_categories(stm, key, {"goals": "kept"})
    bad_calls = [
        {"categories": {"unknown": "x"}},
        {"categories": {"Goals": "a", "goals": "b"}},
        {"summary": "summary given in category mode"},
        {},
    ]
    for extra in bad_calls:
        with pytest.raises(ValidationError):
            await stm.admin.edit_memory(server_id=SERVER, channel_id=CHANNEL,
                                        persona_id=PERSONA, **extra)  # type: ignore[arg-type]
    assert await stm.adapter.get_memory(key) == before
    with pytest.raises(ValidationError, match="summary mode"):
        await stm.admin.edit_memory(server_id="g2", channel_id=CHANNEL, persona_id=PERSONA,
                                    categories={"summary": "x"})


async def test_clear_channel_removes_every_row_of_the_channel(stm: Stm) -> None:
    keys = [MemoryKey.server(SERVER, CHANNEL, "p1"), MemoryKey.server(SERVER, CHANNEL, "p2"),
            MemoryKey.user("u1", CHANNEL, "p1", SERVER), MemoryKey.user("u2", CHANNEL, None, None)]
    survivor = MemoryKey.server(SERVER, "c2", "p1")
    for key in [*keys, survivor]:
        await seed_summary(stm, key, "s")
    await stm.engine.server_memories(SERVER)
    await stm.engine.user_view("u1")
    result = await stm.admin.clear_channel(CHANNEL)
    assert result.removed == 4 and set(result.keys) == set(keys)
    for key in keys:
        assert await stm.adapter.get_memory(key) is None
        assert await stm.engine.live_record(key) is None, "the cache forgot it too"
    assert await stm.adapter.get_memory(survivor) is not None


async def test_clear_user_removes_only_their_user_rows(stm: Stm) -> None:
    mine = [MemoryKey.user("u1", "c1", "p1", SERVER), MemoryKey.user("u1", "dm", None, None)]
    shared = MemoryKey.server(SERVER, "c1", "p1")
    theirs = MemoryKey.user("u2", "c1", "p1", SERVER)
    for key in [*mine, shared, theirs]:
        await seed_summary(stm, key, "s")
    await stm.engine.user_view("u1")
    result = await stm.admin.clear_user("u1")
    assert set(result.keys) == set(mine)
    assert await stm.adapter.get_memory(shared) is not None
    assert await stm.adapter.get_memory(theirs) is not None
    cached = stm.cache.users.peek("u1")
    assert cached is not None and not cached.memories.records
