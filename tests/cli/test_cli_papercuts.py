"""Small things an operator meets: a bare ``--db`` path, Ctrl-C, a truthful
``stm context``, and ``config import`` warning only about memories that exist."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import open_store

from .conftest import RunStm, clean_env, ok, refused, stm_executable


def test_a_bare_path_is_a_sqlite_file(stm_raw: RunStm, tmp_path: Path) -> None:
    assert "Created the schema" in ok(stm_raw("--db", "bot.db", "db", "upgrade")).stdout
    assert (tmp_path / "bot.db").exists()  # relative to the working directory
    ok(stm_raw("--db", "bot.db", "server", "params", "set", "1", "--cadence", "3"))
    absolute = str(tmp_path / "bot.db")
    assert ok(stm_raw("--json", "--db", absolute, "server", "params", "show", "1")).json()[
        "refresh_cadence"] == 3
    env_too = stm_raw("--json", "server", "params", "show", "1",
                      env={"STM_DATABASE_URL": "bot.db"})
    assert ok(env_too).json()["refresh_cadence"] == 3
    assert refused(stm_raw("--db", "typo.db", "server", "list")) == (
        "stm: error: no database at typo.db; `stm db upgrade` creates one")


def read_until(fd: int, text: bytes, timeout_s: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout_s
    while text not in seen:
        left = deadline - time.monotonic()
        assert left > 0, seen
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, seen
            seen += chunk
    return seen


def test_ctrl_c_exits_130(db_arg: str, stm_cli: RunStm, tmp_path: Path) -> None:
    ok(stm_cli("db", "upgrade"))
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen([stm_executable(), "--db", db_arg, "memory", "clear-channel",
                                 "c1"], stdin=terminal, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=clean_env(tmp_path))
        assert proc.stderr is not None
        read_until(proc.stderr.fileno(), b"Continue?")
        time.sleep(0.5)  # into the read of the answer
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        os.close(controller)
        os.close(terminal)
    assert proc.returncode == 130
    assert err.decode().strip().endswith("stm: interrupted")


def dump(db_file: Path) -> list[str]:
    with sqlite3.connect(db_file) as conn:
        return sorted(conn.iterdump())


async def test_context_for_a_user_writes_nothing(stm_cli: RunStm, db_arg: str,
                                                 db_file: Path) -> None:
    help_text = ok(stm_cli("context", "--help")).stdout
    said = " ".join(help_text.split())
    assert "Nothing is written: no turn is counted or recorded, and a database without a " \
        "current schema is refused" in said
    async with open_store(db_arg, load_entrypoints=False) as stm:
        await stm.record_turn(
            Turn(user_id="u1", channel_id="c1", server_id="g1", persona_id="p"),
            [HistoryMessage(author_type="user", content="hi", author_id="u1")],
            [PersonaResponse(content="yo", persona_name="Bot", persona_id="p")])
    before = dump(db_file)
    for where in (("--server", "g1"), ("--server", "g2"), ("--dm",)):
        ok(stm_cli("context", *where, "--channel", "c1", "--user", "u1", "--persona", "p"))
    assert dump(db_file) == before


async def test_config_import_mentions_deleting_memories_only_when_there_are_some(
        stm_cli: RunStm, db_arg: str, tmp_path: Path) -> None:
    ok(stm_cli("db", "upgrade"))
    doc = ok(stm_cli("config", "export", "g1")).json()
    doc["categories"] = [{"label": "Mood", "description": "how they feel"}]
    file = tmp_path / "g.json"
    file.write_text(json.dumps(doc), encoding="utf-8")
    empty = refused(stm_cli("config", "import", "g1", str(file)))
    assert "change categories of server g1;" in empty and "memories" not in empty
    assert "delete" not in ok(stm_cli("config", "import", "g1", str(file), "--dry-run")).stdout

    async with open_store(db_arg, load_entrypoints=False) as stm:
        await stm.record_turn(
            Turn(user_id="u1", channel_id="c1", server_id="g1", persona_id="p"),
            [HistoryMessage(author_type="user", content="hi", author_id="u1")],
            [PersonaResponse(content="yo", persona_name="Bot", persona_id="p")])
    busy = refused(stm_cli("config", "import", "g1", str(file)))
    assert "and delete its shared channel memories" in busy
