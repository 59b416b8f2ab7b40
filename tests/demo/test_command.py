"""``stm demo`` as people and scripts run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from stm_core.cli.demo.command import demo
from stm_core.cli.demo.transcript import Transcript
from stm_core.cli.state import CliState


def test_json_output_parses_and_holds_the_turn_records(sqlite_url: str,
                                                       transcript: Transcript) -> None:
    result = CliRunner().invoke(demo, ["--db", sqlite_url, "--json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["turns"]) == len(transcript.turns)
    first = doc["turns"][0]
    assert {"number", "where", "memory_items", "nudge", "messages", "tool_offered",
            "tool_call", "counter_after"} <= set(first)
    assert doc["summary"]["nudges"] == 3


def test_json_from_the_group_state_and_turn_limit() -> None:
    state = CliState(db_url=None, json_output=True)
    result = CliRunner().invoke(demo, ["--turns", "3"], obj=state)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [t["number"] for t in doc["turns"]] == [1, 2, 3]


def test_people_see_each_turn_and_the_summary(sqlite_url: str) -> None:
    result = CliRunner().invoke(demo, ["--db", sqlite_url, "--turns", "11"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Turn 11" in out and "Turn 12" not in out
    assert "the prompt the model gets" in out
    assert "[nudge]" in out
    assert "model calls update_short_term_memory" in out
    assert "5 → 1" in out
    assert "What stm did" in out


def test_quiet_prints_one_line_per_turn(sqlite_url: str) -> None:
    result = CliRunner().invoke(demo, ["--db", sqlite_url, "--quiet", "--turns", "6"])
    assert result.exit_code == 0, result.stderr
    assert "the prompt the model gets" not in result.stdout
    assert "Turns" in result.stdout and "What stm did" in result.stdout


def test_a_bad_database_url_is_a_usage_error_without_traceback() -> None:
    result = CliRunner().invoke(demo, ["--db", "nosuchdb://x", "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert "nosuchdb" in result.stderr


def test_installed_stm_demo_json_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "stm"
    completed = subprocess.run([str(script), "demo", "--json"], capture_output=True,
                               text=True, timeout=120, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    doc = json.loads(completed.stdout)
    assert doc["turns"] and doc["summary"]["leaks"] == []
    assert list(tmp_path.iterdir()) == []


def test_budget_option_holds_every_turn(sqlite_url: str) -> None:
    result = CliRunner().invoke(demo, ["--db", sqlite_url, "--json", "--budget", "120"])
    assert result.exit_code == 0, result.stderr
    turns = json.loads(result.stdout)["turns"]
    assert {t["budget_tokens"] for t in turns} == {120}
    assert all(t["memory_tokens"] <= 120 or not t["memory_items"] for t in turns)
    shown = CliRunner().invoke(demo, ["--db", sqlite_url, "--turns", "8", "--budget", "120"])
    assert shown.exit_code == 0, shown.stderr
    assert "of 120 tokens of the prompt budget" in shown.stdout


def test_a_negative_budget_is_a_usage_error() -> None:
    result = CliRunner().invoke(demo, ["--budget", "-1"])
    assert result.exit_code == 2
    assert "--budget" in result.stderr and "Traceback" not in result.stderr
