"""The demo replay on a real SQLite file: what it must show, turn by turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import attrs

from stm_core.cli.demo.results import DemoResult, TurnRecord
from stm_core.cli.demo.runner import TEMPORARY_DATABASE, run_demo
from stm_core.cli.demo.transcript import Transcript
from stm_core.cli.demo.world import World
from stm_core.settings import DEFAULT_REFRESH_CADENCE, Settings
from stm_core.text.slugs import slugify


def in_channel(result: DemoResult, name: str) -> list[TurnRecord]:
    return [r for r in result.turns if r.where.channel_name == name]


def shown_to_model(record: TurnRecord) -> list[str]:
    """Everything stm put into this turn's prompt."""
    texts = [item.text for item in record.memory_items]
    if record.nudge is not None:
        texts.append(record.nudge.text)
    return texts


def lines_of(transcript: Transcript, channel_keys: set[str]) -> list[str]:
    """Every incoming line and reply said in these channels."""
    said = []
    for turn in transcript.turns:
        if turn.channel in channel_keys:
            said += [m.text for m in turn.messages] + [turn.reply]
    return said


def test_default_run_uses_a_temporary_sqlite_file_and_removes_it(
        replayed: DemoResult, demo_temp_dir: Path, transcript: Transcript) -> None:
    assert replayed.summary.database == TEMPORARY_DATABASE
    assert len(replayed.turns) == len(transcript.turns)
    assert list(demo_temp_dir.iterdir()) == []


def test_nudge_first_appears_on_the_sixth_bot_turn_of_a_fresh_channel(
        replayed: DemoResult) -> None:
    campaign = in_channel(replayed, "campaign")
    assert len(campaign) >= 11
    nudged = [r.bot_turn_in_channel for r in campaign if r.nudge is not None]
    assert nudged == [6, 11]
    # The counter the nudge is gated on climbs one per bot turn from a fresh 0.
    assert [r.counter_before for r in campaign[:6]] == [0, 1, 2, 3, 4, 5]
    assert campaign[5].counter_before == DEFAULT_REFRESH_CADENCE


def test_summary_mode_channel_is_nudged_on_its_sixth_bot_turn_too(
        replayed: DemoResult) -> None:
    table_talk = in_channel(replayed, "table-talk")
    assert [r.bot_turn_in_channel for r in table_talk if r.nudge is not None] == [6]


def test_a_tool_call_resets_the_counter(replayed: DemoResult) -> None:
    called = [r for r in replayed.turns if r.tool_call is not None]
    assert len(called) == 3
    followed = 0
    for record in called:
        assert record.tool_call is not None and record.tool_call.ok, record.tool_call
        assert record.counter_before == DEFAULT_REFRESH_CADENCE
        # Reset to 0 by the tool, then the post-turn increment.
        assert record.counter_after == 1
        later = [r for r in in_channel(replayed, record.where.channel_name)
                 if r.number > record.number]
        if later:
            followed += 1
            assert later[0].counter_before == 1
            assert later[0].nudge is None
    assert followed >= 2, "the transcript goes on after most tool calls"


def test_the_model_is_nudged_only_where_the_tool_is_offered(replayed: DemoResult) -> None:
    nudged = [r for r in replayed.turns if r.nudge is not None]
    assert len(nudged) == 3
    for record in nudged:
        assert record.tool_offered
        assert record.tool_call is not None


def test_written_memory_shows_up_in_the_channel_on_the_next_turn(
        replayed: DemoResult) -> None:
    campaign = in_channel(replayed, "campaign")
    first_call = next(r for r in campaign if r.tool_call is not None)
    assert first_call.tool_call is not None
    after = campaign[campaign.index(first_call) + 1]
    same = [i for i in after.memory_items if i.kind == "same_channel"]
    assert len(same) == 1
    for value in first_call.tool_call.written.values():
        assert value in same[0].text
    assert "Party Status: " in same[0].text


def test_category_mode_tool_schema_has_one_property_per_slug(
        replayed: DemoResult, transcript: Transcript) -> None:
    slugs = tuple(slugify(c.label) for c in transcript.servers["emberfall"].categories)
    assert slugs == ("goals", "party_status", "open_threads")
    campaign = in_channel(replayed, "campaign")
    assert len(campaign) >= 11
    for record in campaign:
        assert record.tool_properties == slugs
        assert record.tool_schema is not None
        parameters = record.tool_schema["function"]["parameters"]
        assert tuple(parameters["properties"]) == slugs
        assert parameters["required"] == list(slugs)
    call = next(r.tool_call for r in in_channel(replayed, "campaign") if r.tool_call)
    assert tuple(call.written) == slugs


def test_summary_mode_server_offers_a_single_summary_argument(replayed: DemoResult) -> None:
    for name in ("table-talk", "scheduling"):
        turns = in_channel(replayed, name)
        assert turns, name
        for record in turns:
            assert record.tool_properties == ("summary",)


def test_private_channel_and_thread_content_never_reach_a_public_context(
        replayed: DemoResult, transcript: Transcript) -> None:
    private = {k for k, c in transcript.channels.items() if transcript.is_private(c)}
    assert private == {"mod-lounge", "appeal-ravenwood"}
    secrets = lines_of(transcript, private)
    public = [r for r in replayed.turns if r.where.visibility == "public"]
    assert public
    for record in public:
        for text in shown_to_model(record):
            for secret in secrets:
                assert secret not in text, (record.number, record.where.label)
    # The check can fail: a private channel does see its private thread.
    thread_lines = lines_of(transcript, {"appeal-ravenwood"})
    lounge = in_channel(replayed, "mod-lounge")[-1]
    assert any(line in text for text in shown_to_model(lounge) for line in thread_lines)
    assert replayed.summary.leaks == ()


def test_dm_content_never_reaches_a_server(replayed: DemoResult,
                                            transcript: Transcript) -> None:
    dm_lines = lines_of(transcript, {"dm-mira"})
    assert dm_lines
    in_servers = [r for r in replayed.turns if r.where.server_id is not None]
    assert in_servers and any(shown_to_model(r) for r in in_servers)
    for record in in_servers:
        for text in shown_to_model(record):
            assert not any(line in text for line in dm_lines), record.number


def test_novelai_turns_get_memory_items_but_no_tool_and_no_nudge(
        replayed: DemoResult) -> None:
    novelai = [r for r in replayed.turns if r.provider == "novelai"]
    assert len(novelai) >= 3
    for record in novelai:
        assert record.tool_offered is False
        assert record.tool_schema is None
        assert record.nudge is None
        assert record.tool_call is None
        # Counted all the same: the counter is not a tool concern.
        assert record.counter_after == record.counter_before + 1
    # Once Quill has spoken anywhere, its other channels are remembered.
    assert all(r.memory_items for r in novelai[1:])
    assert all(i.kind == "other_channels" for r in novelai for i in r.memory_items)


def test_personas_only_remember_their_own_lineage(replayed: DemoResult) -> None:
    quill_channels = {r.where.channel_name for r in replayed.turns if r.persona_name == "Quill"}
    assert quill_channels
    tomori = [r for r in replayed.turns if r.persona_name == "Tomori" and r.memory_items]
    assert tomori
    for record in tomori:
        for item in record.memory_items:
            for name in quill_channels:
                assert f"`{name}`" not in item.text


def test_each_item_is_placed_in_the_prompt_where_the_record_says(
        replayed: DemoResult) -> None:
    assert sum(len(r.memory_items) for r in replayed.turns) > len(replayed.turns) // 2
    for record in replayed.turns:
        items = [*record.memory_items, *([record.nudge] if record.nudge else [])]
        for item in items:
            assert item.index is not None
            placed = record.messages[item.index]
            assert placed.injected == item.kind
            assert placed.content == item.text
        injected = [m for m in record.messages if m.injected is not None]
        assert len(injected) == len(items)


def test_fresh_memory_moves_next_to_the_dialogue_and_stale_memory_stays_on_top(
        replayed: DemoResult) -> None:
    # Minutes after the campaign: fresh, so the block sits at depth 2.
    assert in_channel(replayed, "campaign")[-1].memory_injection_depth == 2
    # After a 95-minute break every memory is stale: anchored near the top.
    scheduling = in_channel(replayed, "scheduling")[0]
    assert scheduling.memory_items
    assert scheduling.memory_injection_depth == -1
    assert scheduling.memory_items[0].index == 1  # right after the system prompt


def test_summary_counts_what_happened(replayed: DemoResult) -> None:
    summary = replayed.summary
    assert summary.turns == len(replayed.turns)
    assert summary.nudges == 3
    assert summary.tool_calls == summary.tool_calls_ok == 3
    assert summary.memory_fields_written == 3 + 1 + 3
    assert summary.novelai_turns_with_tool_or_nudge == 0
    assert summary.private_lines > 0 and summary.dm_lines > 0


def test_json_document_holds_every_turn_record(replayed: DemoResult) -> None:
    doc = replayed.to_json()
    assert [t["number"] for t in doc["turns"]] == [r.number for r in replayed.turns]
    eleventh = doc["turns"][10]
    assert eleventh["nudge"]["kind"] == "nudge"
    assert eleventh["tool_call"]["ok"] is True
    assert doc["summary"]["leaks"] == []


async def test_a_kept_database_replays_identically(sqlite_url: str) -> None:
    first = await run_demo(sqlite_url, max_turns=12)
    second = await run_demo(sqlite_url, max_turns=12)
    assert len(first.turns) == 12
    assert first.to_json() == second.to_json()


async def test_the_replay_on_postgresql_matches_sqlite(pg_url: str,
                                                       replayed: DemoResult) -> None:
    on_pg = await run_demo(pg_url)
    assert on_pg.turns == replayed.turns
    assert attrs.evolve(on_pg.summary, database="") == attrs.evolve(replayed.summary,
                                                                   database="")


def test_the_closing_scene_undoes_a_bad_rewrite(replayed: DemoResult) -> None:
    undo = replayed.summary.undo
    assert undo is not None
    assert "(nothing worth keeping)" in str(undo["bad"])
    assert undo["restored"] == undo["before"] and "(nothing worth keeping)" not in str(
        undo["restored"])
    assert int(undo["rev"]) > int(undo["restored_from"])


def test_both_cache_policies_prefix_reuse_is_reported(replayed: DemoResult) -> None:
    figures = replayed.summary.prefix_reuse
    assert set(figures) == {"freshness", "stable"}
    assert figures["stable"]["mean_share"] > figures["freshness"]["mean_share"]
    assert figures["stable"]["relative_cost"] < figures["freshness"]["relative_cost"]
    # Ages change the text under freshness; stable changes it only with memory.
    assert figures["stable"]["steady_turns"] > figures["freshness"]["steady_turns"]
    assert figures["stable"]["steady_mean_share"] > figures["stable"]["mean_share"]
    assert figures["stable"]["kept_share"] > figures["freshness"]["kept_share"]
    assert figures["stable"]["without_memory_mean_share"] == figures["freshness"][
        "without_memory_mean_share"] < 1
    assert replayed.to_json()["summary"]["prefix_reuse"] == figures


def test_the_prompt_budget_at_work(replayed: DemoResult) -> None:
    """With a tight budget every turn's additions fit it, and turns that held
    more without one now hold less, never losing the same channel first."""
    budget = 150
    tight = asyncio.run(run_demo(settings=Settings(prompt_budget_tokens=budget)))
    assert all(r.budget_tokens == budget for r in tight.turns)
    assert all(r.memory_tokens <= budget or not r.memory_items for r in tight.turns)
    shrunk = [(free, held) for free, held in zip(replayed.turns, tight.turns, strict=True)
              if free.memory_tokens > budget]
    assert len(shrunk) >= 5
    for free, held in shrunk:
        assert held.memory_tokens < free.memory_tokens
        free_kinds = [i.kind for i in free.memory_items]
        held_kinds = [i.kind for i in held.memory_items]
        if "same_channel" in free_kinds and "other_channels" in held_kinds:
            assert "same_channel" in held_kinds
    assert all(r.budget_tokens == 2000 and r.memory_tokens <= 2000 for r in replayed.turns)


def test_every_demo_turn_names_its_persona_s_model(transcript: Transcript) -> None:
    world = World(transcript)
    turns = [world.turn(scripted) for scripted in transcript.turns]
    assert turns and all(t.model for t in turns)
    assert {t.model for t in turns} == {p.model for p in transcript.personas.values()}
