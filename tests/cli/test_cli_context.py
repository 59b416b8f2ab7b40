"""``stm context``: categories set from the command reach the tool schema and
(once the counter is due) the nudge, injected where the depths say."""

from __future__ import annotations

import json
from pathlib import Path

from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import open_store

from .conftest import RunStm, ok, refused

TURN = ("--server", "g1", "--channel", "c1", "--user", "u1", "--persona", "p1",
        "--bot-name", "Tomori")


async def bump_counter(url: str, by: int) -> None:
    """What record_turn does after each bot turn, through the Python API."""
    async with open_store(url, load_entrypoints=False) as stm:
        await stm.engine.capture([CaptureWrite(key=MemoryKey.server("g1", "c1", "p1"), messages=(),
                                        now_ms=stm.clock.now_ms(), counter_increment=by)])


async def test_categories_reach_schema_then_nudge(stm_cli: RunStm, db_arg: str) -> None:
    ok(stm_cli("db", "upgrade"))
    before = ok(stm_cli("--json", "context", *TURN)).json()
    assert before["tool_schema"]["mode"] == "summary"
    assert before["nudge"] is None and before["memory_items"] == []

    ok(stm_cli("server", "categories", "set", "g1", "--yes", "--line", "Goals: where we go",
               "--line", "HP/MP: health and mana"))
    ctx = ok(stm_cli("--json", "context", *TURN)).json()
    schema = ctx["tool_schema"]
    assert schema["name"] == "update_short_term_memory" and schema["mode"] == "category"
    assert schema["parameters"]["required"] == ["goals", "hp_mp"]
    assert schema["parameters"]["properties"]["hp_mp"]["description"] == "health and mana"
    assert ctx["nudge"] is None, "a fresh channel is not nudged"

    ok(stm_cli("memory", "edit", "--server", "g1", "--channel", "c1", "--persona", "p1",
               "--field", "Goals=find the exit"))
    await bump_counter(db_arg, 5)  # the default cadence
    ctx = ok(stm_cli("--json", "context", *TURN)).json()
    nudge = ctx["nudge"]["text"]
    assert "Goals, HP/MP" in nudge and "`update_short_term_memory`" in nudge
    [same] = ctx["memory_items"]
    assert same["kind"] == "same_channel" and "Goals: find the exit" in same["text"]
    assert ctx["nudge_injection_depth"] == 2

    # Injected before the last two dialogue turns, block first, nudge right below.
    contents = [m["content"] for m in ctx["messages"]]
    assert contents[-4:] == [same["text"], nudge, "The key is cold in Bob's hand; something "
                             "stirs.", "We run for the exit!"]

    human = ok(stm_cli("context", *TURN))
    assert "Goals, HP/MP" in human.stdout and '"hp_mp"' in human.stdout


async def test_no_tools_and_provider_gates(stm_cli: RunStm, db_arg: str) -> None:
    await bump_counter(db_arg, 9)
    due = ok(stm_cli("--json", "context", *TURN)).json()
    assert due["nudge"] is not None and due["tool_schema"] is not None
    for flag in (("--no-tools",), ("--provider", "novelai"), ("--long-term-intent",)):
        ctx = ok(stm_cli("--json", "context", *TURN, *flag)).json()
        assert ctx["nudge"] is None and ctx["tool_schema"] is None, flag
    off = ok(stm_cli("server", "capability", "off", "g1"))
    assert off.code == 0
    ctx = ok(stm_cli("--json", "context", *TURN)).json()
    assert ctx["nudge"] is None and ctx["tool_schema"] is None


def test_dialogue_file(stm_cli: RunStm, tmp_path: Path) -> None:
    ok(stm_cli("db", "upgrade"))
    dialogue = tmp_path / "chat.json"
    dialogue.write_text(json.dumps([{"role": "user", "content": "only turn"}]),
                        encoding="utf-8")
    ctx = ok(stm_cli("--json", "context", *TURN, "--dialogue", str(dialogue))).json()
    assert ctx["messages"] == [{"role": "user", "content": "only turn"}]
    dialogue.write_text(json.dumps({"role": "user"}), encoding="utf-8")
    assert "list of messages" in refused(stm_cli("context", *TURN, "--dialogue",
                                                 str(dialogue)))


def test_context_needs_a_user(stm_cli: RunStm) -> None:
    line = refused(stm_cli("context", "--server", "g1", "--channel", "c1"))
    assert "--user" in line


def test_previous_shows_what_changed_since_the_last_turn(stm_cli: RunStm,
                                                         tmp_path: Path) -> None:
    edit = ("memory", "edit", "--server", "g1", "--channel", "c1", "--persona", "p1")
    ok(stm_cli(*edit, "--summary", "The party met Bob."))
    ok(stm_cli("server", "params", "set", "g1", "--cache-policy", "stable"))
    first = tmp_path / "turn1.json"
    first.write_text(ok(stm_cli("--json", "context", *TURN)).stdout, encoding="utf-8")

    same = ok(stm_cli("--json", "context", *TURN, "--previous", str(first))).json()
    assert {p["status"] for p in same["changes"]["parts"]} == {"unchanged"}
    assert same["changes"]["prefix_reuse"] == 1.0

    ok(stm_cli(*edit, "--summary", "The party met Bob and Mira."))
    changed = ok(stm_cli("--json", "context", *TURN, "--previous", str(first))).json()
    status = {p["part"]: p["status"] for p in changed["changes"]["parts"]}
    assert status["memory block (same_channel)"] == "changed"
    assert status["memory injection depth"] == "unchanged"
    assert 0 < changed["changes"]["prefix_reuse"] < 1
    human = ok(stm_cli("context", *TURN, "--previous", str(first)))
    assert "memory block (same_channel): changed" in human.stdout

    for bad in ("[1, 2]", '{"memory_items": [1], "messages": []}',
                '{"memory_items": [], "messages": [1, "x"]}'):
        first.write_text(bad, encoding="utf-8")
        assert "stm --json context" in refused(stm_cli("context", *TURN, "--previous",
                                                       str(first)))


def test_previous_keeps_a_stable_block_in_place_and_names_the_first_change(
        stm_cli: RunStm, tmp_path: Path) -> None:
    edit = ("memory", "edit", "--server", "g1", "--channel", "c1", "--persona", "p1")
    ok(stm_cli(*edit, "--summary", "The party met Bob."))
    ok(stm_cli("server", "params", "set", "g1", "--cache-policy", "stable"))
    chat = [{"role": "system", "content": "You are Tomori."},
            {"role": "user", "content": "u1: hello"}]
    dialogue, turn1 = tmp_path / "chat.json", tmp_path / "turn1.json"
    dialogue.write_text(json.dumps(chat), encoding="utf-8")
    first = ok(stm_cli("--json", "context", *TURN, "--dialogue", str(dialogue)))
    turn1.write_text(first.stdout, encoding="utf-8")
    assert first.json()["messages"][-1]["content"].startswith("[System:")

    chat += [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "u1: go"}]
    dialogue.write_text(json.dumps(chat), encoding="utf-8")
    grown = ok(stm_cli("--json", "context", *TURN, "--dialogue", str(dialogue),
                       "--previous", str(turn1))).json()
    status = {p["part"]: p["status"] for p in grown["changes"]["parts"]}
    assert status["memory block position"] == "unchanged"
    assert grown["changes"]["first_change"] is None
    assert grown["messages"][:3] == first.json()["messages"]
    assert [m["content"] for m in grown["messages"][3:]] == ["Hi!", "u1: go"]

    ok(stm_cli(*edit, "--summary", "The party met Bob and Mira."))
    changed = ok(stm_cli("--json", "context", *TURN, "--dialogue", str(dialogue),
                         "--previous", str(turn1))).json()
    assert changed["changes"]["first_change"] == "memory block (same_channel)"
    assert changed["messages"][-1]["content"].endswith("Bob and Mira.]")
    human = ok(stm_cli("context", *TURN, "--dialogue", str(dialogue), "--previous",
                       str(turn1)))
    assert "first difference: memory block (same_channel)" in human.stdout

    ok(stm_cli("server", "params", "set", "g1", "--cache-policy", "freshness"))
    chat[0]["content"] = "You are Tomori, now terse."
    dialogue.write_text(json.dumps(chat), encoding="utf-8")
    fresh = ok(stm_cli("--json", "context", *TURN, "--dialogue", str(dialogue),
                       "--previous", str(turn1))).json()
    assert fresh["changes"]["first_change"] == "system prompt"
