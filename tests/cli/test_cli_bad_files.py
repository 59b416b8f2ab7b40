"""Bad input files and output paths: exit 2 with one line, never a Python exception name."""

from __future__ import annotations

from pathlib import Path

import pytest

from stm_core.cli.files import MAX_JSON_DEPTH

from .conftest import RunStm, ok, refused

EXCEPTION_NAMES = ("Error:", "Exception", "Traceback", "errno", "Errno")


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the one line must say)."""
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00{\x80\x81 not text")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep_object = tmp_path / "deep_object.json"
    deep_object.write_text('{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Goals: où va le groupe".encode("latin-1"))
    return {"binary": (binary, "not UTF-8 text"), "deep": (deep, "nested more than"),
            "deep object": (deep_object, "nested more than"),
            "latin-1": (latin1, "not UTF-8 text")}


COMMANDS = {
    "config import": lambda f: ("config", "import", "g1", str(f)),
    "categories set --file": lambda f: ("server", "categories", "set", "g1", "--file", str(f)),
    "context --dialogue": lambda f: ("context", "--server", "g1", "--channel", "c1",
                                     "--user", "u1", "--dialogue", str(f)),
    "prompts set --nudge-file": lambda f: ("server", "prompts", "set", "g1",
                                           "--nudge-file", str(f)),
    "memory edit --summary-file": lambda f: ("memory", "edit", "--server", "g1",
                                             "--channel", "c1", "--summary-file", str(f)),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unreadable_input_files_exit_2_with_one_line(stm_cli: RunStm, tmp_path: Path,
                                                     command: str) -> None:
    ok(stm_cli("db", "upgrade"))  # a database to check that nothing reached it
    for name, (path, says) in bad_files(tmp_path).items():
        if name.startswith("deep") and command not in {"config import", "context --dialogue"}:
            continue  # a text (not JSON) input: depth means nothing
        line = refused(stm_cli(*COMMANDS[command](path)))
        assert says in line and path.name in line, (name, line)
        assert not any(word in line for word in EXCEPTION_NAMES), line
    # Nothing was written by any refused command.
    shown = ok(stm_cli("--json", "server", "prompts", "show", "g1")).json()
    assert shown["nudge"]["is_default"]


def test_export_to_a_missing_folder_exits_2_with_one_line(stm_cli: RunStm,
                                                          tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "server.json"
    ok(stm_cli("db", "upgrade"))
    line = refused(stm_cli("config", "export", "g1", "-o", str(target)))
    assert "does not exist" in line and str(target.parent) in line
    assert not any(word in line for word in EXCEPTION_NAMES), line
    ok(stm_cli("config", "export", "g1", "-o", str(tmp_path / "server.json")))
    assert (tmp_path / "server.json").exists()


def test_json_just_within_the_depth_limit_is_read(stm_cli: RunStm, tmp_path: Path) -> None:
    ok(stm_cli("db", "upgrade"))
    dialogue = tmp_path / "dialogue.json"
    dialogue.write_text('[{"role": "user", "content": "hi", "x": ' + "[" * 60 + "]" * 60 + "}]")
    ok(stm_cli("context", "--server", "g1", "--channel", "c1", "--user", "u1",
               "--dialogue", str(dialogue)))
