"""``stm server ...`` end to end on a SQLite file."""

from __future__ import annotations

from pathlib import Path

from .conftest import RunStm, ok, refused


def test_params_show_set_reset(stm_cli: RunStm) -> None:
    ok(stm_cli("db", "upgrade"))
    shown = ok(stm_cli("--json", "server", "params", "show", "g1")).json()
    assert shown["refresh_cadence"] == 5 and shown["render_mode"] == "crude_summary"
    assert shown["labels"]["content_injection_depth"] == "anchored (default)"

    human = ok(stm_cli("server", "params", "set", "g1", "--cadence", "1",
                       "--render-mode", "supersede", "--nudge-depth", "0",
                       "--crude-messages", "4", "--content-depth", "3",
                       "--cache-policy", "stable", "--budget", "800"))
    assert "every turn" in human.stdout and "tail" in human.stdout
    assert "800 tokens" in human.stdout

    shown = ok(stm_cli("server", "params", "show", "g1", "--json")).json()
    assert (shown["refresh_cadence"], shown["render_mode"], shown["nudge_injection_depth"],
            shown["crude_message_count"], shown["content_injection_depth"],
            shown["cache_policy"]) == (1, "supersede", 0, 4, 3, "stable")
    assert shown["defaults"] == [] and shown["prompt_budget_tokens"] == 800

    reset = ok(stm_cli("--json", "server", "params", "reset", "g1", "--only",
                       "refresh_cadence")).json()
    assert reset["refresh_cadence"] == 5 and reset["render_mode"] == "supersede"


def test_params_refusals_name_the_flag_the_operator_typed(stm_cli: RunStm) -> None:
    """Not the API field behind it (``refresh_cadence``): the operator typed ``--cadence``."""
    cases = [(("--render-mode", "sideways"), "--render-mode must be one of"),
             (("--content-depth", "-2"), "--content-depth must be an integer from -1 to 20"),
             (("--cadence", "500"), "--cadence must be an integer from 1 to 100, got 500"),
             (("--budget", "-5"), "--budget must be an integer from 0 to 1000000"),
             (("--crude-messages", "0"), "--crude-messages must be an integer from 1"),
             (("--nudge-depth", "21"), "--nudge-depth must be an integer from 0 to 20")]
    for args, start in cases:
        line = refused(stm_cli("server", "params", "set", "g1", *args))
        assert line.startswith(f"stm: error: {start}"), line
    assert "server_id" in refused(stm_cli("server", "params", "show", "has space"))
    assert "cache-policy" in refused(stm_cli("server", "params", "set", "g1",
                                             "--cache-policy", "warm"))
    shown = ok(stm_cli("--json", "server", "params", "show", "g1")).json()
    assert len(shown["defaults"]) == 7, "nothing was written"


def test_params_show_says_when_nothing_is_stored(stm_cli: RunStm) -> None:
    ok(stm_cli("db", "upgrade"))
    for server in ("notanumber", "g1"):
        shown = ok(stm_cli("server", "params", "show", server))
        assert shown.stderr == (f"Nothing is stored for server {server}: every parameter "
                                "shown is the default.\n")
    ok(stm_cli("server", "params", "set", "g1", "--cadence", "3"))
    assert ok(stm_cli("server", "params", "show", "g1")).stderr == ""


def test_prompts_set_show_reset(stm_cli: RunStm, tmp_path: Path) -> None:
    nudge_file = tmp_path / "nudge.txt"
    nudge_file.write_text("[System: refresh {short_term_memory_tool} now]\n", encoding="utf-8")
    result = ok(stm_cli("--json", "server", "prompts", "set", "g1", "--nudge-file",
                        str(nudge_file), "--tool-description", "Keep short notes.")).json()
    assert result["nudge"] == {"text": "[System: refresh {short_term_memory_tool} now]",
                               "is_default": False}
    assert result["tool_description"]["text"] == "Keep short notes."

    human = ok(stm_cli("server", "prompts", "show", "g1"))
    assert "[System: refresh {short_term_memory_tool} now]" in human.stdout
    assert "custom" in human.stdout

    reset = ok(stm_cli("--json", "server", "prompts", "reset", "g1", "--nudge")).json()
    assert reset["nudge"]["is_default"] and not reset["tool_description"]["is_default"]
    stored = ok(stm_cli("--json", "server", "prompts", "set", "g1", "--nudge",
                        "Refresh at {12:30} {x.__class__}")).json()
    assert stored["nudge"]["text"] == "Refresh at {12:30} {x.__class__}"  # as typed


def test_categories_set_show_reset(stm_cli: RunStm, tmp_path: Path) -> None:
    result = ok(stm_cli("--json", "server", "categories", "set", "g1", "--yes",
                        "--line", "Goals: where we go", "--line", "HP/MP: health")).json()
    assert result["mode"] == "category"
    assert [c["slug"] for c in result["categories"]] == ["goals", "hp_mp"]

    lines = tmp_path / "categories.txt"
    lines.write_text("Mood: how it feels\n\nThreats: what hunts us\n", encoding="utf-8")
    ok(stm_cli("server", "categories", "set", "g1", "--yes", "--file", str(lines)))
    human = ok(stm_cli("server", "categories", "show", "g1"))
    assert "Threats" in human.stdout and "threats" in human.stdout
    assert "Goals" not in human.stdout

    assert "duplicate" in refused(stm_cli("server", "categories", "set", "g1", "--yes",
                                          "--line", "A: x", "--line", "a: y"))
    assert "invalid format" in refused(stm_cli("server", "categories", "set", "g1", "--yes",
                                               "--line", "no colon"))
    assert "Threats" in ok(stm_cli("server", "categories", "show", "g1")).stdout

    reset = ok(stm_cli("--json", "server", "categories", "reset", "g1", "--yes")).json()
    assert reset["is_default"] and reset["categories"][0]["label"] == "summary"


def test_privacy(stm_cli: RunStm) -> None:
    result = ok(stm_cli("--json", "server", "privacy", "set", "g1", "c2", "c1")).json()
    assert result["private_channel_ids"] == ["c1", "c2"]
    ok(stm_cli("server", "privacy", "add", "g1", "c3"))
    result = ok(stm_cli("--json", "server", "privacy", "remove", "g1", "c1")).json()
    assert result["private_channel_ids"] == ["c2", "c3"]
    bypass = ok(stm_cli("server", "privacy", "bypass", "g1", "on"))
    assert "warning" in bypass.stderr and "Privacy bypass: on" in bypass.stdout
    shown = ok(stm_cli("--json", "server", "privacy", "show", "g1")).json()
    assert shown == {"server_id": "g1", "private_channel_ids": ["c2", "c3"],
                     "privacy_bypass": True}
    cleared = ok(stm_cli("--json", "server", "privacy", "set", "g1")).json()
    assert cleared["private_channel_ids"] == []
    refused(stm_cli("server", "privacy", "add", "g1"))


def test_capability(stm_cli: RunStm) -> None:
    ok(stm_cli("db", "upgrade"))
    shown = ok(stm_cli("--json", "server", "capability", "show", "g1")).json()
    assert shown == {"server_id": "g1", "stm_enabled": True, "is_default": True}
    off = ok(stm_cli("server", "capability", "off", "g1"))
    assert "off" in off.stdout and "still show" in off.stdout
    shown = ok(stm_cli("--json", "server", "capability", "show", "g1")).json()
    assert shown["stm_enabled"] is False and shown["is_default"] is False
    assert ok(stm_cli("--json", "server", "capability", "on", "g1")).json()["stm_enabled"]


def test_params_show_marks_a_render_mode_whose_plugin_is_gone(stm_cli: RunStm,
                                                              db_arg: str) -> None:
    import asyncio

    from stm_core.store import open_store

    async def store_gone_mode() -> None:
        async with open_store(db_arg, load_entrypoints=False) as stm:
            await stm.adapter.update_server_settings("g1", {"render_mode": "fancy"},
                                                     now_ms=stm.clock.now_ms())

    asyncio.run(store_gone_mode())
    shown = ok(stm_cli("--json", "server", "params", "show", "g1")).json()
    assert shown["render_mode"] == "crude_summary"
    assert shown["unavailable"] == {"render_mode": "fancy"}
    human = ok(stm_cli("server", "params", "show", "g1")).stdout
    assert "stored 'fancy' is not installed" in human
