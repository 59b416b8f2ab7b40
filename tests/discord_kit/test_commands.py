"""The §11 command surface under the real discord.py client: each command's
permission and its spec rules, checked on what the bot sent and what is stored."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_discord import open_store
from stm_discord.acting import FAILED
from stm_discord.commands import GUILD_ONLY, REFUSED
from stm_discord.testing.fake_discord import Channel, FakeDiscord, Guild, Sent
from stm_discord.testing.world import (
    ALICE,
    BOB,
    BOT,
    DM,
    GENERAL,
    SECRETS,
    Running,
    fake_discord,
    running_bot,
)
from stm_discord.views import CATEGORIES_TITLE, LABEL_MAX, PLACEHOLDER_MAX, VALUE_MAX
from tests.discord_kit.support import ask, stored_lines

SERVER = "7"


async def stored(run: Running) -> dict[str, Any]:
    """Everything the guarded commands could write, read as the host."""
    admin = run.stm.admin
    memory = await admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                     server_id=SERVER)
    return {"params": (await admin.server_params(SERVER)).to_dict(),
            "prompts": (await admin.prompts(SERVER)).to_dict(),
            "categories": (await admin.categories(SERVER)).to_dict(),
            "privacy": (await admin.privacy(SERVER)).to_dict(),
            "capability": (await admin.capability(SERVER)).to_dict(),
            "memory": memory.text}


def inputs(modal: dict[str, Any]) -> list[dict[str, Any]]:
    """The text inputs of a modal, in order, whatever rows or labels hold them."""
    found = []
    for component in modal["components"]:
        stack = [component]
        while stack:
            item = stack.pop(0)
            if item["type"] == 4:
                found.append({**item, "label": item.get("label") or component.get("label")})
            stack += item.get("components") or []
            if "component" in item:
                stack.append(item["component"])
    return found


def components(sent: Sent) -> list[dict[str, Any]]:
    data = sent.body.get("data", sent.body)
    found, stack = [], list(data.get("components") or [])
    while stack:
        item = stack.pop(0)
        found.append(item)
        stack += item.get("components") or []
    return found


GUARDED = [("server stm parameters", {}), ("server stm parameters", {"refresh_cadence": 3}),
           ("server stm prompt-edit", {}), ("server stm categories-edit", {}),
           ("server stm privacy-bypass", {}), ("server private-channels", {}),
           ("capabilities manage", {}), ("persona stm edit", {})]


@pytest.mark.parametrize(("path", "options"), GUARDED, ids=[p + str(o) for p, o in GUARDED])
async def test_a_member_without_manage_server_is_refused_and_nothing_is_written(
        run: Running, path: str, options: dict[str, Any]) -> None:
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER, summary="kept as it was")
    before = await stored(run)
    answer = await run.fake.slash(GENERAL.id, BOB, path, **options)
    assert answer.kind == "callback" and answer.ephemeral
    assert answer.content == REFUSED
    assert answer.modal is None and not components(answer)
    assert await stored(run) == before
    # The admin is let through (the refusal is the permission, not the command).
    allowed = await run.fake.slash(GENERAL.id, ALICE, path, **options)
    assert allowed.content != REFUSED


@pytest.mark.parametrize("path", ["server stm parameters", "server stm privacy-bypass",
                                  "server private-channels", "capabilities manage"])
async def test_server_commands_are_guild_only(run: Running, path: str) -> None:
    answer = await run.fake.slash(DM, ALICE, path)
    assert answer.content == GUILD_ONLY and answer.ephemeral


async def test_a_submit_from_a_member_is_refused_even_on_an_admins_modal(run: Running) -> None:
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    before = await stored(run)
    answer = await run.fake.submit_modal(opened, BOB, {"Category 1": "Mood: how it feels"})
    assert "Not saved" in answer.text and answer.ephemeral
    assert await stored(run) == before


# -- /server stm parameters ----------------------------------------------------------------------
async def test_parameters_without_options_shows_and_writes_nothing(run: Running) -> None:
    settings = await run.stm.adapter.load_server_settings(SERVER)
    answer = await run.fake.slash(GENERAL.id, ALICE, "server stm parameters")
    assert answer.ephemeral and answer.content.startswith("**Current settings**")
    assert "Render mode: **crude_summary**" in answer.content
    assert await run.stm.adapter.load_server_settings(SERVER) == settings


async def test_parameters_writes_only_what_is_given_and_echoes_with_labels(run: Running) -> None:
    answer = await run.fake.slash(GENERAL.id, ALICE, "server stm parameters",
                                  refresh_cadence=1, nudge_depth=0)
    assert "Refresh cadence: **every turn**" in answer.content
    assert "Nudge depth: **tail**" in answer.content
    assert "Content depth: **anchored (default)**" in answer.content
    params = await run.stm.admin.server_params(SERVER)
    assert (params.refresh_cadence, params.nudge_injection_depth) == (1, 0)
    assert params.defaults == {"render_mode", "crude_message_count", "content_injection_depth",
                               "cache_policy", "prompt_budget_tokens"}
    answer = await run.fake.slash(GENERAL.id, ALICE, "server stm parameters", content_depth=3)
    assert "Content depth: **before the last 3 turns**" in answer.content
    assert (await run.stm.admin.server_params(SERVER)).refresh_cadence == 1


async def test_parameters_declares_discords_bounds(run: Running) -> None:
    await run.bot.tree.sync()
    [server] = [c for c in run.fake.commands if c["name"] == "server"]
    assert int(server["default_member_permissions"]) == 1 << 5
    assert server["dm_permission"] is False  # guild only
    [stm] = [o for o in server["options"] if o["name"] == "stm"]
    [params] = [o for o in stm["options"] if o["name"] == "parameters"]
    bounds = {o["name"]: (o.get("min_value"), o.get("max_value")) for o in params["options"]}
    assert bounds == {"refresh-cadence": (1, 100), "crude-messages": (1, 10),
                      "nudge-depth": (0, 20), "content-depth": (-1, 20),
                      "render-mode": (None, None)}
    [mode] = [o for o in params["options"] if o["name"] == "render-mode"]
    assert [c["value"] for c in mode["choices"]] == ["supersede", "crude_summary"]


async def test_an_out_of_range_value_is_refused_and_not_written(run: Running) -> None:
    """Discord enforces the bounds; a value past them (a forged request) is
    refused by stm's own check."""
    answer = await run.fake.slash(GENERAL.id, ALICE, "server stm parameters",
                                  refresh_cadence=101)
    assert "refresh_cadence must be an integer from 1 to 100" in answer.text
    assert "refresh_cadence" in (await run.stm.admin.server_params(SERVER)).defaults


# -- /server stm prompt-edit --------------------------------------------------------------------
async def test_prompt_edit_prefills_the_defaults_and_an_empty_box_resets(run: Running) -> None:
    defaults = await run.stm.admin.prompts(SERVER)
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm prompt-edit")
    assert opened.modal is not None
    boxes = inputs(opened.modal)
    assert [b["value"] for b in boxes] == [defaults.tool_description.text, defaults.nudge.text]
    assert all(b["max_length"] == 4000 and not b["required"] for b in boxes)
    answer = await run.fake.submit_modal(opened, ALICE, {"Tool description": "Keep notes."})
    assert answer.content == "Prompts saved: 1 custom, 1 default."
    saved = await run.stm.admin.prompts(SERVER)
    assert saved.tool_description.text == "Keep notes." and saved.nudge.is_default
    # Prefilled with the override now; an emptied box resets it.
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm prompt-edit")
    assert inputs(opened.modal or {})[0]["value"] == "Keep notes."
    answer = await run.fake.submit_modal(opened, ALICE, {"Tool description": "  "})
    assert answer.content == "Prompts saved: 0 custom, 2 default."
    assert (await run.stm.admin.prompts(SERVER)).tool_description.is_default


async def test_prompt_edit_prefills_the_category_modes_nudge(run: Running) -> None:
    await run.stm.admin.set_categories(SERVER, ["Mood: how it feels", "Plans: what is next"])
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm prompt-edit")
    assert "{category_labels}" in inputs(opened.modal or {})[1]["value"]


# -- /server stm categories-edit ----------------------------------------------------------------
async def test_categories_edit_saves_and_clears_the_shared_memories(run: Running) -> None:
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER, summary="old memory")
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    assert opened.modal is not None and opened.modal["title"] == CATEGORIES_TITLE
    boxes = inputs(opened.modal)
    assert len(boxes) == 5 and all(b["max_length"] == 1000 for b in boxes)
    assert "clears the server's shared memories" in boxes[0]["placeholder"]
    answer = await run.fake.submit_modal(opened, ALICE, {
        "Category 1": "Mood: calm: quiet", "Category 3": " Plans :  what is next "})
    assert "1 shared memories cleared" in answer.content
    saved = await run.stm.admin.categories(SERVER)
    # Split at the first colon, trimmed, gaps collapsed.
    assert [(c.position, c.label, c.description) for c in saved.categories] == [
        (0, "Mood", "calm: quiet"), (1, "Plans", "what is next")]
    assert (await stored(run))["memory"].startswith("(no short-term memory")
    # Prefilled with the stored ones next time.
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    assert [b.get("value") for b in inputs(opened.modal or {})][:2] == [
        "Mood: calm: quiet", "Plans: what is next"]


@pytest.mark.parametrize(("slots", "reason"), [
    ({"Category 1": "Mood: fine", "Category 2": "no colon here"}, "invalid format"),
    ({"Category 1": "Mood: fine", "Category 2": ": no label"}, "invalid category"),
    ({"Category 1": "Mood: fine", "Category 2": "Plans:   "}, "invalid category"),
    ({"Category 1": "Mood: fine", "Category 2": "!!!: no slug"}, "no ASCII letter"),
    ({"Category 1": "Mood: fine", "Category 2": "MOOD: again"}, "duplicate"),
])
async def test_one_bad_slot_rejects_the_whole_submit(run: Running, slots: dict[str, str],
                                                     reason: str) -> None:
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER, summary="kept")
    before = await stored(run)
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    answer = await run.fake.submit_modal(opened, ALICE, slots)
    data = answer.body["data"]
    assert data["embeds"][0]["title"] == "Not saved" and reason in answer.text
    assert await stored(run) == before


async def test_all_slots_empty_restores_the_default_category(run: Running) -> None:
    await run.stm.admin.set_categories(SERVER, ["Mood: how it feels"])
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    await run.fake.submit_modal(opened, ALICE, {"Category 1": ""})
    saved = await run.stm.admin.categories(SERVER)
    assert saved.is_default and [c.slug for c in saved.categories] == ["summary"]


# -- /server stm privacy-bypass, /server private-channels ------------------------------------
async def test_privacy_bypass_toggles_with_a_warning_then_a_success(run: Running) -> None:
    on = await run.fake.slash(GENERAL.id, ALICE, "server stm privacy-bypass")
    assert on.body["data"]["embeds"][0]["title"] == "Privacy bypass enabled"
    assert "Warning" in on.text and (await run.stm.admin.privacy(SERVER)).privacy_bypass
    off = await run.fake.slash(GENERAL.id, ALICE, "server stm privacy-bypass")
    assert off.body["data"]["embeds"][0]["title"] == "Privacy bypass disabled"
    assert not (await run.stm.admin.privacy(SERVER)).privacy_bypass


async def test_private_channels_are_picked_in_the_checkbox_list(run: Running) -> None:
    shown = await run.fake.slash(GENERAL.id, ALICE, "server private-channels")
    assert shown.content == "Private channels: none"
    [select] = [c for c in components(shown) if c["type"] == 3]
    assert [o["label"] for o in select["options"]] == ["general", "secrets"]
    assert select["min_values"] == 0
    picked = await run.fake.click(shown, ALICE, "stm-private-channels", values=[str(SECRETS.id)])
    assert picked.body["type"] == 7 and picked.content == "Private channels: #secrets"
    assert (await run.stm.admin.privacy(SERVER)).private_channel_ids == (str(SECRETS.id),)
    # A member's click on the admin's list changes nothing.
    refused = await run.fake.click(picked, BOB, "stm-private-channels", values=[])
    assert "Not saved" in refused.text
    assert (await run.stm.admin.privacy(SERVER)).private_channel_ids == (str(SECRETS.id),)


# -- /capabilities manage -------------------------------------------------------------------
async def test_the_short_term_memory_checkbox_stops_the_tool_not_the_memory(
        run: Running, model: Any) -> None:
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER, summary="the kiln is hot")
    shown = await run.fake.slash(GENERAL.id, ALICE, "capabilities manage")
    [button] = [c for c in components(shown) if c["type"] == 2]
    assert button["label"] == "☑ Short-Term Memory"
    clicked = await run.fake.click(shown, ALICE, "stm-capability-toggle")
    assert "**off**" in clicked.content
    assert not (await run.stm.admin.capability(SERVER)).stm_enabled
    await run.fake.say(GENERAL.id, BOB, "<@99> remember nothing", mentions=[BOT])
    await run.fake.messages_in(GENERAL.id, 1)
    assert "tools" not in model.requests[-1]
    assert "the kiln is hot" in str(model.requests[-1]["messages"])


# -- /persona stm edit ----------------------------------------------------------------------
async def test_persona_edit_picker_modal_save_and_picker_again(run: Running) -> None:
    await run.stm.admin.set_categories(SERVER, [
        "mood of the room and everything else worth a long label: " + "d" * 150,
        "plans: what is next"])
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER, categories={"plans": "paint"})
    key = await run.stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                          server_id=SERVER)
    picker = await run.fake.slash(GENERAL.id, ALICE, "persona stm edit")
    [select] = [c for c in components(picker) if c["type"] == 3]
    assert [o["label"] for o in select["options"]] == ["Tomori", "Kuro"]
    opened = await run.fake.click(picker, ALICE, "stm-persona-pick", values=["1"])
    boxes = inputs(opened.modal or {})
    assert [b["label"] for b in boxes] == [
        "Mood of the room and everything else worth a "[:LABEL_MAX], "Plans"]
    assert len(boxes[0]["placeholder"]) == PLACEHOLDER_MAX
    assert all(b["max_length"] == VALUE_MAX for b in boxes)
    assert [b.get("value") for b in boxes] == [None, "paint"]  # prefilled from the store
    saved = await run.fake.submit_modal(opened, ALICE, {"Plans": "sculpt", boxes[0]["label"]:
                                                        "cheerful"})
    assert saved.content.startswith("Saved Tomori's memory.")
    assert [c["custom_id"] for c in components(saved) if c["type"] == 3] == ["stm-persona-pick"]
    after = await run.stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                            server_id=SERVER)
    assert [(s.slug, s.text) for s in after.sections][1] == ("plans", "sculpt")
    assert after.turns_since_refresh == key.turns_since_refresh
    # The editor's own copy is written too.
    mine = await run.stm.engine.live_record(MemoryKey.user("42", str(GENERAL.id), "1", SERVER))
    assert mine is not None and mine.categories["plans"] == "sculpt"


async def test_persona_edit_keeps_the_cadence_counter(run: Running) -> None:
    for n in range(2):
        await ask(run, GENERAL.id, ALICE, f"hi {n}", n + 1)
    await stored_lines(run, GENERAL.id, count=4)  # both turns recorded
    before = await run.stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                             server_id=SERVER)
    picker = await run.fake.slash(GENERAL.id, ALICE, "persona stm edit")
    opened = await run.fake.click(picker, ALICE, "stm-persona-pick", values=["1"])
    await run.fake.submit_modal(opened, ALICE, {"Summary": "Alice greets a lot."})
    after = await run.stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                            server_id=SERVER)
    assert after.text == "Alice greets a lot."
    assert after.turns_since_refresh == before.turns_since_refresh >= 1


async def test_persona_edit_in_a_dm_needs_no_permission(run: Running) -> None:
    picker = await run.fake.slash(DM, BOB, "persona stm edit")
    opened = await run.fake.click(picker, BOB, "stm-persona-pick", values=["2"])
    await run.fake.submit_modal(opened, BOB, {"Summary": "Bob likes pastels."})
    snap = await run.stm.admin.view_memory(channel_id=str(DM), persona_id="2", user_id="43")
    assert snap.text == "Bob likes pastels."
    shown = await run.fake.slash(DM, BOB, "persona stm view")
    assert shown.ephemeral and shown.embeds_text == (
        "**Kuro**\n*The memory of your direct messages with the bot.*\n\nBob likes pastels.")
    # An emptied box clears it.
    picker = await run.fake.slash(DM, BOB, "persona stm edit")
    opened = await run.fake.click(picker, BOB, "stm-persona-pick", values=["2"])
    assert inputs(opened.modal or {})[0]["value"] == "Bob likes pastels."
    await run.fake.submit_modal(opened, BOB, {"Summary": ""})
    assert (await run.stm.admin.view_memory(channel_id=str(DM), persona_id="2",
                                            user_id="43")).is_empty


# -- /persona stm view ----------------------------------------------------------------------------
async def test_persona_view_is_open_ephemeral_with_the_scope_note(run: Running) -> None:
    none = await run.fake.slash(GENERAL.id, BOB, "persona stm view")
    assert none.content == "none" and none.ephemeral
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="2",
                                    server_id=SERVER, summary="Kuro watches the kiln.")
    shown = await run.fake.slash(GENERAL.id, BOB, "persona stm view")
    assert shown.ephemeral
    assert shown.embeds_text == ("**Kuro**\n*Shared memory of this channel (everyone here "
                                 "sees it in the bot).*\n\nKuro watches the kiln.")


async def test_persona_view_lists_categories_and_truncates_at_3800(run: Running) -> None:
    labels = ["Mood", "Plans", "People", "Places", "Things"]
    await run.stm.admin.set_categories(SERVER, [f"{label}: about {label}" for label in labels])
    await run.stm.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="1",
                                    server_id=SERVER,
                                    categories={label: "x" * 1500 for label in labels})
    shown = await run.fake.slash(GENERAL.id, BOB, "persona stm view")
    body = shown.embeds_text.split("\n\n", 1)[1]
    assert body.startswith("**Mood**:\n" + "x" * 10)
    assert body.endswith("\n… (truncated)") and len(body) == 3800 + len("\n… (truncated)")
    assert "\n\n**Plans**:\n" in body


# -- /personal stm, /help stm ------------------------------------------------------------------
async def test_personal_stm_toggles_the_opt_in_and_clears(run: Running) -> None:
    answer = await run.fake.slash(GENERAL.id, BOB, "personal stm", setting="crossserver")
    assert answer.content == "Cross-server memories are now **on** for you."
    assert (await run.stm.admin.user_opt_in("43")).crossserver_opt_in
    answer = await run.fake.slash(DM, BOB, "personal stm", setting="crossserver")
    assert answer.content == "Cross-server memories are now **off** for you."
    await run.stm.admin.edit_memory(channel_id=str(DM), persona_id="1", user_id="43",
                                    summary="Bob's own memory")
    answer = await run.fake.slash(GENERAL.id, BOB, "personal stm", setting="clear")
    assert answer.content == "Cleared your short-term memories (1)."
    assert (await run.stm.admin.view_memory(channel_id=str(DM), persona_id="1",
                                            user_id="43")).is_empty


async def test_help_stm_is_a_guide(run: Running) -> None:
    answer = await run.fake.slash(GENERAL.id, BOB, "help stm")
    assert answer.ephemeral and "/persona stm view" in answer.content


async def test_persona_edit_prefills_from_the_database_on_a_cold_cache(
        run: Running, kit_db_url: str) -> None:
    """The value comes from an awaited read, not from whatever the cache holds:
    a memory written by another process (the ``stm`` command) shows, so saving
    the modal cannot wipe it."""
    async with open_store(kit_db_url, load_entrypoints=False) as other:
        await other.admin.edit_memory(channel_id=str(GENERAL.id), persona_id="2",
                                      server_id=SERVER, summary="Written elsewhere.")
    picker = await run.fake.slash(GENERAL.id, ALICE, "persona stm edit")
    opened = await run.fake.click(picker, ALICE, "stm-persona-pick", values=["2"])
    assert inputs(opened.modal or {})[0]["value"] == "Written elsewhere."


async def test_categories_edit_has_as_many_slots_as_categories_allowed(
        tmp_path: Any, model: Any) -> None:
    settings = Settings(max_categories=3)
    async with fake_discord() as fake, \
            open_store(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", settings=settings,
                       load_entrypoints=False) as stm, \
            running_bot(fake, stm, model.router()):
        opened = await fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    assert [b["label"] for b in inputs(opened.modal or {})] == [
        "Category 1", "Category 2", "Category 3"]


async def test_private_channels_come_in_pages_and_other_pages_stay(
        tmp_path: Any, model: Any) -> None:
    channels = tuple(Channel(id=2000 + n, name=f"room-{n:02}") for n in range(30))
    big = Guild(id=8, name="Big", channels=channels, members=(ALICE, BOB, BOT))
    async with FakeDiscord([big], bot=BOT) as fake, \
            open_store(f"sqlite+aiosqlite:///{tmp_path / 'p.db'}",
                       load_entrypoints=False) as stm:
        fake.point_discord_py_here()
        async with running_bot(fake, stm, model.router()):
            first = await fake.slash(2000, ALICE, "server private-channels")
            [select] = [c for c in components(first) if c["type"] == 3]
            assert len(select["options"]) == 25 and select["options"][0]["label"] == "room-00"
            first = await fake.click(first, ALICE, "stm-private-channels", values=["2003"])
            second = await fake.click(first, ALICE, "stm-private-next")
            [select] = [c for c in components(second) if c["type"] == 3]
            assert [o["label"] for o in select["options"]] == [
                f"room-{n}" for n in range(25, 30)]
            second = await fake.click(second, ALICE, "stm-private-channels", values=["2027"])
            assert second.content == "Private channels: #room-03, #room-27"
            assert (await stm.admin.privacy("8")).private_channel_ids == ("2003", "2027")


async def test_a_failing_store_gets_an_apology_not_silence(
        run: Running, caplog: pytest.LogCaptureFixture) -> None:
    opened = await run.fake.slash(GENERAL.id, ALICE, "server stm categories-edit")
    shown = await run.fake.slash(GENERAL.id, ALICE, "capabilities manage")
    await run.stm.aclose()
    answer = await run.fake.slash(GENERAL.id, BOB, "persona stm view")
    assert answer.content == FAILED and answer.ephemeral
    assert "/persona stm view failed" in caplog.text
    # A modal's submit and a button's click too.
    submitted = await run.fake.submit_modal(opened, ALICE, {"Category 1": "Mood: calm"})
    assert submitted.content == FAILED and submitted.ephemeral
    clicked = await run.fake.click(shown, ALICE, "stm-capability-toggle")
    assert clicked.content == FAILED and clicked.ephemeral
