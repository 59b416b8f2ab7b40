"""Categories: parsing `label: description` lines, every refusal, the replace
transaction that clears server memories, and the cache after it."""

from __future__ import annotations

import pytest

from stm_core.errors import ValidationError
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm

from .helpers import seed_summary

SERVER = "g1"


async def test_default_is_the_single_summary_category(stm: Stm) -> None:
    shown = await stm.admin.categories(SERVER)
    assert shown.is_default and shown.mode == "summary"
    assert [(c.label, c.slug, c.position) for c in shown.categories] == [
        ("summary", "summary", 0)]


async def test_set_parses_lines_renumbers_and_switches_mode(stm: Stm) -> None:
    shown = await stm.admin.set_categories(SERVER, [
        "", "  Goals :  Where the party is headed ", "HP/MP: Health: and mana", "   ",
        "Party Status: who is hurt"])
    assert shown.mode == "category" and not shown.is_default
    assert [(c.position, c.label, c.description, c.slug) for c in shown.categories] == [
        (0, "Goals", "Where the party is headed", "goals"),
        (1, "HP/MP", "Health: and mana", "hp_mp"),
        (2, "Party Status", "who is hurt", "party_status"),
    ]
    stored = await stm.adapter.load_server_settings(SERVER)
    assert [c.label for c in stored.categories] == ["Goals", "HP/MP", "Party Status"]
    profile = await stm.engine.profile_for(SERVER)
    assert profile.mode == "category"
    assert list(profile.slug_map) == ["goals", "hp_mp", "party_status"]


async def test_one_text_block_is_split_at_newlines(stm: Stm) -> None:
    shown = await stm.admin.set_categories(SERVER, "A: first\n\nB: second\n")
    assert [c.label for c in shown.categories] == ["A", "B"]


@pytest.mark.parametrize(("lines", "message"), [
    (["Goals no colon"], "invalid format"),
    ([": no label"], "label is empty"),
    (["Label:   "], "description is empty"),
    (["日本語: only non-ASCII"], "no ASCII letter"),
    (["Goals: a", "goals!: b"], "duplicate"),
    ([f"C{i}: d" for i in range(6)], "too many categories"),
    (["Goals: " + "x" * 1000], "at most 1000"),
])
async def test_refusals_write_nothing(stm: Stm, lines: list[str], message: str) -> None:
    await stm.admin.set_categories(SERVER, ["Keep: this one"])
    key = MemoryKey.server(SERVER, "c1", "p1")
    await seed_summary(stm, key, "still here")
    before = await stm.adapter.load_server_settings(SERVER)
    with pytest.raises(ValidationError, match=message) as info:
        await stm.admin.set_categories(SERVER, lines)
    assert info.value.field == "categories"
    assert await stm.adapter.load_server_settings(SERVER) == before
    assert await stm.adapter.get_memory(key) is not None


async def test_max_categories_follows_settings(stm: Stm) -> None:
    shown = await stm.admin.set_categories(SERVER, [f"C{i}: d" for i in range(5)])
    assert len(shown.categories) == 5


async def test_replace_clears_server_memories_and_the_cache(stm: Stm) -> None:
    server_key = MemoryKey.server(SERVER, "c1", "p1")
    other_server = MemoryKey.server("g2", "c9", "p1")
    user_copy = MemoryKey.user("u1", "c1", "p1", SERVER)
    for key in (server_key, other_server, user_copy):
        await seed_summary(stm, key, "old summary")
    view = await stm.engine.server_memories(SERVER)
    assert server_key in view.records

    shown = await stm.admin.set_categories(SERVER, ["Goals: g"])
    assert shown.cleared_memories == 1
    assert await stm.adapter.get_memory(server_key) is None
    assert await stm.adapter.get_memory(other_server) is not None
    assert await stm.adapter.get_memory(user_copy) is not None, "user copies are kept"
    cached = stm.cache.servers.peek(SERVER)
    assert cached is not None and server_key not in cached.records
    assert await stm.engine.live_record(server_key) is None
    assert stm.cache.settings.peek(SERVER) == await stm.adapter.load_server_settings(SERVER)


async def test_all_blank_or_reset_restores_default(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: g", "Mood: m"])
    shown = await stm.admin.set_categories(SERVER, ["", "  "])
    assert shown.is_default and shown.mode == "summary"
    assert (await stm.adapter.load_server_settings(SERVER)).categories == ()

    await stm.admin.set_categories(SERVER, ["Goals: g"])
    shown = await stm.admin.reset_categories(SERVER)
    assert shown.is_default
    assert (await stm.engine.profile_for(SERVER)).mode == "summary"
