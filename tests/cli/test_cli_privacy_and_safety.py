"""The installed ``stm`` command on SQLite and PostgreSQL: privacy requests,
seeing what is stored, and the guards (missing database, ``--dry-run``,
confirmation, ``--yes``)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from stm_core._util.clock import ManualClock, SystemClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import open_store

from .conftest import RunStm, clean_env, ok, refused, stm_executable

X, Y = "4242", "5151"
G = "900"


@pytest.fixture
def stm_db(stm_raw: RunStm, db_url: str) -> RunStm:
    """``stm --db <SQLite file or PostgreSQL schema> ...``."""

    def run(*args: str, **kwargs: object) -> object:
        return stm_raw("--db", db_url, *args, **kwargs)  # type: ignore[arg-type]

    return run  # type: ignore[return-value]


async def seed_turns(url: str) -> None:
    """X and Y talk in G's #c1 and #c2 (raw lines only, no summaries), X opts in."""
    async with open_store(url, load_entrypoints=False) as stm:
        for user, channel, lines in ((X, "c1", [(Y, "y-hello-1"), (X, "x-secret-1")]),
                                     (Y, "c1", [(X, "x-secret-1"), (Y, "y-hello-2")]),
                                     (Y, "c2", [(X, "x-secret-2"), (Y, "y-hello-3")])):
            history = [HistoryMessage(author_type="user", content=text, author_id=author,
                                      speaker_name=f"n{author}") for author, text in lines]
            await stm.record_turn(
                Turn(user_id=user, channel_id=channel, server_id=G, persona_id="p"),
                history, [PersonaResponse(content="ok", persona_name="Bot", persona_id="p")])
        await stm.admin.set_user_opt_in(X, opt_in=True)


def contents(view: dict[str, object]) -> list[str]:
    return [m["content"] for m in view["messages"]]  # type: ignore[attr-defined,index]


async def test_forget_and_export_a_user(stm_db: RunStm, db_url: str, tmp_path: Path) -> None:
    await seed_turns(db_url)
    out = tmp_path / "x.json"
    ok(stm_db("user", "export", X, "-o", str(out)))
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert exported["preferences"] == {"crossserver_opt_in": True}
    assert {m["content"] for r in exported["lines_in_other_rows"] for m in r["messages"]} == {
        "x-secret-1", "x-secret-2"}
    assert [r["key"]["channel_id"] for r in exported["own_rows"]] == ["c1"]

    preview = ok(stm_db("--json", "user", "forget", X, "--dry-run")).json()
    assert preview["dry_run"] and preview["lines_removed"] == 4
    assert ok(stm_db("user", "export", X)).json()["lines_in_other_rows"] == exported[
        "lines_in_other_rows"]
    assert "--yes" in refused(stm_db("user", "forget", X))

    done = ok(stm_db("--json", "user", "forget", X, "--yes")).json()
    assert (done["lines_removed"], len(done["rows_removed"]), done["preferences_removed"]) == (
        4, 1, True)
    after = ok(stm_db("user", "export", X)).json()
    assert (after["own_rows"], after["lines_in_other_rows"]) == ([], [])
    view = ok(stm_db("--json", "memory", "view", "--server", G, "--channel", "c2",
                     "--persona", "p")).json()
    assert contents(view) == ["y-hello-3", "ok"]
    human = ok(stm_db("user", "forget", X, "--yes"))
    assert "Removed user 4242's 0 own memory rows and 0 lines" in human.stdout


async def test_memory_view_and_list_show_stored_raw_lines(stm_db: RunStm, db_url: str) -> None:
    await seed_turns(db_url)
    ok(stm_db("server", "params", "set", "777", "--cadence", "3"))  # settings only
    view = ok(stm_db("memory", "view", "--server", G, "--channel", "c1", "--persona", "p"))
    assert "x-secret-1" in view.stdout and "y-hello-2" in view.stdout
    assert "Stored raw lines (3" in view.stdout
    listed = ok(stm_db("--json", "memory", "list", "--server", G, "--channel", "c1")).json()
    assert [(p["persona_id"], p["content"], p["lines"]) for p in listed] == [("p", "lines", 3)]
    whole = ok(stm_db("--json", "memory", "list", "--server", G)).json()
    assert [p["channel_id"] for p in whole] == ["c1", "c2"]
    assert ok(stm_db("--json", "server", "list")).json() == sorted([G, "777"])
    assert "--channel" in refused(stm_db("memory", "list", "--dm", "--user", X))


def test_db_path_names_the_file_without_creating_it(stm_cli: RunStm, db_file: Path,
                                                    stm_raw: RunStm) -> None:
    shown = ok(stm_cli("--json", "db", "path")).json()
    assert shown["path"] == str(db_file.resolve()) and shown["exists"] is False
    assert not db_file.exists()
    assert "does not exist yet" in ok(stm_cli("db", "path")).stdout
    pg = ok(stm_raw("--json", "--db", "postgresql+asyncpg://u:secret@h/db", "db", "path")).json()
    assert pg["path"] is None and "secret" not in pg["url"]


async def test_dry_runs_change_nothing(stm_db: RunStm, db_url: str, tmp_path: Path) -> None:
    now = SystemClock().now_ms()
    old = now - 100 * 86_400_000
    async with open_store(db_url, load_entrypoints=False, clock=ManualClock(old)) as stm:
        await stm.engine.write_memory([
            MemoryWrite(key=MemoryKey.server(G, f"c{i}", None), now_ms=old, set_summary=True,
                        summary="old") for i in range(3)])
    janitor = ok(stm_db("--json", "janitor", "--dry-run")).json()
    assert janitor == {"removed": 3, "retention_days": 90.0, "dry_run": True}
    clear = ok(stm_db("memory", "clear-channel", "c1", "--dry-run"))
    assert "Would remove 1 memory rows of channel c1." in clear.stdout

    doc = ok(stm_db("config", "export", G)).json()
    doc["params"]["refresh_cadence"] = 7
    doc["categories"] = [{"label": "Goals", "description": "g"}]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    preview = ok(stm_db("--json", "config", "import", G, str(path), "--dry-run")).json()
    assert preview["would_change"] == ["categories", "params.refresh_cadence"]
    assert preview["clears_server_memories"] is True
    assert "params.refresh_cadence" in ok(stm_db("config", "import", G, str(path),
                                                 "--dry-run")).stdout

    assert ok(stm_db("--json", "db", "info")).json()["memory_rows"] == 3
    assert ok(stm_db("--json", "server", "params", "show", G)).json()["refresh_cadence"] == 5
    done = ok(stm_db("--json", "janitor", "--yes")).json()
    assert done["removed"] == 3


DESTRUCTIVE = (
    ("memory", "clear-channel", "c1"),
    ("user", "clear", "u1"),
    ("user", "forget", "u1"),
    ("janitor",),
    ("server", "categories", "reset", "g1"),
    ("server", "categories", "set", "g1", "--line", "Goals: g"),
)


@pytest.mark.parametrize("command", DESTRUCTIVE, ids=lambda c: " ".join(c[:2]))
async def test_destructive_commands_need_yes_without_a_terminal(
        stm_cli: RunStm, db_arg: str, command: tuple[str, ...]) -> None:
    async with open_store(db_arg, load_entrypoints=False) as stm:
        await stm.engine.write_memory([MemoryWrite(key=MemoryKey.server("g1", "c1", None),
                                            now_ms=stm.clock.now_ms(), set_summary=True,
                                            summary="keep me")])
    line = refused(stm_cli(*command))
    assert "pass --yes to confirm" in line
    assert ok(stm_cli("--json", "db", "info")).json()["memory_rows"] == 1


def run_on_terminal(args: list[str], answer: str, home: Path) -> tuple[int, str]:
    """Run ``stm`` with a terminal as stdin, typing ``answer``."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen([stm_executable(), *args], stdin=terminal,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=clean_env(home), text=True)
        os.write(controller, answer.encode() + b"\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    return proc.returncode, out + err


async def test_a_terminal_is_asked_first(db_arg: str, stm_cli: RunStm, tmp_path: Path) -> None:
    async with open_store(db_arg, load_entrypoints=False) as stm:
        await stm.engine.write_memory([MemoryWrite(key=MemoryKey.server("g1", "c1", None),
                                            now_ms=stm.clock.now_ms(), set_summary=True,
                                            summary="keep me")])
    args = ["--db", db_arg, "memory", "clear-channel", "c1"]
    code, text = run_on_terminal(args, "n", tmp_path)
    assert code == 1 and "delete every memory of channel c1. Continue?" in text
    assert ok(stm_cli("--json", "db", "info")).json()["memory_rows"] == 1
    code, text = run_on_terminal(args, "y", tmp_path)
    assert code == 0 and "Removed 1 memory rows" in text
    assert ok(stm_cli("--json", "db", "info")).json()["memory_rows"] == 0


def test_params_reset_only_takes_the_names_set_takes(stm_cli: RunStm) -> None:
    ok(stm_cli("server", "params", "set", "g1", "--cadence", "3", "--nudge-depth", "0",
               "--content-depth", "4"))
    reset = ok(stm_cli("--json", "server", "params", "reset", "g1", "--only", "cadence",
                       "--only=--nudge-depth")).json()
    assert (reset["refresh_cadence"], reset["nudge_injection_depth"]) == (5, 2)
    assert reset["content_injection_depth"] == 4
    old_name = ok(stm_cli("--json", "server", "params", "reset", "g1", "--only",
                          "content_injection_depth")).json()
    assert old_name["content_injection_depth"] == -1
    line = refused(stm_cli("server", "params", "reset", "g1", "--only", "cadense"))
    assert "cadense" in line and "cadence, render-mode, crude-messages" in line


def test_context_previews_any_provider_key_as_a_host_turn_gets_it(stm_cli: RunStm) -> None:
    """One rule with the API: a key no rule knows gets the fallback format and
    one warning line; STM_STRICT_PROVIDERS=1 makes it the API's refusal."""
    ok(stm_cli("db", "upgrade"))
    turn = ("--json", "context", "--server", "g1", "--channel", "c1", "--user", "u1")
    for key in ("opneai", "tiny-llm"):
        result = ok(stm_cli(*turn, "--provider", key))
        assert result.json()["tool_schema"]["name"] == "update_short_term_memory"
        (warning,) = [line for line in result.stderr.splitlines() if "stm.tool.formats" in line]
        assert f"unknown provider {key!r}" in warning and "'openai' format" in warning
    assert "did you mean 'openai'" in ok(stm_cli(*turn, "--provider", "opneai")).stderr
    strict = stm_cli(*turn, "--provider", "opneai", env={"STM_STRICT_PROVIDERS": "1"})
    assert strict.code == 2 and strict.stdout == "" and "Traceback" not in strict.stderr
    assert strict.stderr.splitlines()[-1].startswith(
        "stm: error: no tool format is known for provider 'opneai'")
    for key in ("Anthropic", "novelai", "anthropic/claude-3-5-sonnet", "vertex_ai",
                "novelai/kayra", "gpt-4o-mini", "claude-3-5-haiku"):
        assert "stm.tool.formats" not in ok(stm_cli(*turn, "--provider", key)).stderr, key


async def test_verbose_logging_goes_to_stderr(stm_cli: RunStm, db_arg: str) -> None:
    await seed_turns(db_arg)
    result = ok(stm_cli("-v", "--json", "user", "forget", X, "--yes"))
    assert f"stm: INFO stm.admin: user {X} forgotten" in result.stderr
    json.loads(result.stdout)  # stdout stays clean JSON
    quiet = ok(stm_cli("--log-level", "error", "user", "forget", X, "--yes"))
    assert "INFO" not in quiet.stderr
    assert "--log-level" in refused(stm_cli("--log-level", "loud", "db", "info"))
