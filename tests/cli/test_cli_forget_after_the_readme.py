"""The README's host example, then ``stm user forget 42 --yes``: nothing the
user wrote is left, on a SQLite file and on PostgreSQL; ``forget`` and
``export`` count the lines nobody can attribute."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stm_core.errors import UnattributedLineWarning
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.pipeline import record
from stm_core.storage.records import MemoryFilter
from stm_core.store import open_store

from .conftest import RunStm, ok

ROOT = Path(__file__).resolve().parents[2]
ALICE_SAID = "Shall we paint the sky teal?"

#: The README's flow as it was first published: no ``author_id`` anywhere.
FIRST_README_FLOW = '''
import asyncio, sys
from stm_core import HistoryMessage, PersonaResponse, Turn, open_store

async def main():
    async with open_store(sys.argv[1]) as stm:
        turn = Turn(user_id="42", channel_id="1001", server_id="7",
                    persona_id="1", bot_name="Tomori", triggerer_name="Alice",
                    provider="openai")
        await stm.apply_tool_call(turn, {"summary": "Alice wants a teal sky."})
        window = [HistoryMessage(author_type="user", content="Shall we paint the sky teal?",
                                 speaker_name="Alice")]
        await stm.record_window(turn, window, [PersonaResponse(
            content="Teal it is!", persona_name="Tomori", persona_id="1")])

asyncio.run(main())
'''


def readme_host_example(url: str) -> str:
    """The README's "Using it from a host" program, on ``url`` instead of bot.db."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Using it from a host"):]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    program = code[1]
    assert program.count("sqlite+aiosqlite:///bot.db") == 1
    return program.replace('"sqlite+aiosqlite:///bot.db"', "sys.argv[1]").replace(
        "import asyncio\n", "import asyncio\nimport sys\n", 1)


def run_program(code: str, url: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STM_", "SHORT_TERM_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code, url], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


async def bob_talks_too(url: str) -> None:
    """Another user's turn in the same channel, ids given: the row is shared."""
    async with open_store(url, load_entrypoints=False) as stm:
        await stm.record_turn(
            Turn(user_id="43", channel_id="1001", server_id="7", persona_id="1",
                 triggerer_name="Bob"),
            [HistoryMessage(author_type="user", content=ALICE_SAID, speaker_name="Alice",
                            author_id="42"),
             HistoryMessage(author_type="persona", content="Teal it is!",
                            speaker_name="Tomori", author_id="1"),
             HistoryMessage(author_type="user", content="I'd rather have orange",
                            speaker_name="Bob", author_id="43")],
            [PersonaResponse(content="Orange then!", persona_name="Tomori", persona_id="1")])


async def stored_lines(url: str) -> list[tuple[str, str | None]]:
    async with open_store(url, load_entrypoints=False) as stm:
        rows = [r for scope in ("server", "user")
                for r in await stm.adapter.list_memories(MemoryFilter(scope_kind=scope))]
        return [(m.content, m.author_id) for r in rows for m in r.messages]


@pytest.mark.parametrize("flow", ["README as it is", "README as first published"])
async def test_forget_leaves_no_line_of_the_user(flow: str, stm_raw: RunStm, db_url: str,
                                                 tmp_path: Path) -> None:
    code = readme_host_example(db_url) if flow == "README as it is" else FIRST_README_FLOW
    run_program(code, db_url, tmp_path)
    await bob_talks_too(db_url)
    assert (ALICE_SAID, "42") in await stored_lines(db_url)

    done = ok(stm_raw("--db", db_url, "user", "forget", "42", "--yes"))
    assert "Removed user 42's 1 own memory rows" in done.stdout
    assert "every line was checked" in done.stdout

    lines = await stored_lines(db_url)
    assert not [line for line in lines if line[1] == "42" or line[0] == ALICE_SAID]
    assert ("I'd rather have orange", "43") in lines
    view = ok(stm_raw("--db", db_url, "memory", "view", "--server", "7", "--channel", "1001",
                      "--persona", "1"))
    assert ALICE_SAID not in view.stdout and "orange" in view.stdout


async def test_forget_and_export_count_the_lines_they_could_not_check(
        stm_raw: RunStm, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_program(FIRST_README_FLOW, db_url, tmp_path)
    monkeypatch.setattr(record, "_unattributed_warned", False)  # as in a new process
    async with open_store(db_url, load_entrypoints=False) as stm:  # a host passing no ids
        with pytest.warns(UnattributedLineWarning):
            await stm.record_turn(
                Turn(user_id="43", channel_id="1001", server_id="7", persona_id="1",
                     triggerer_name="Bob"),
                [HistoryMessage(author_type="user", content="Alice again, unattributed",
                                speaker_name="Alice"),
                 HistoryMessage(author_type="user", content="me", speaker_name="Bob")],
                [PersonaResponse(content="ok", persona_name="Tomori", persona_id="1")])

    # Both of Bob's lines, in the server row and in Bob's copy: stm guesses no
    # author, not even Bob's for the line by his display name.
    exported = ok(stm_raw("--db", db_url, "user", "export", "42"))
    assert exported.json()["unchecked_lines"] == 4
    assert "4 user lines in 2 rows of their channels (1001) carry no author id" in (
        exported.stderr)

    preview = ok(stm_raw("--db", db_url, "--json", "user", "forget", "42", "--dry-run")).json()
    assert preview["unchecked_lines"] == 4
    assert sorted(r["scope_kind"] for r in preview["unchecked_rows"]) == ["server", "user"]
    done = ok(stm_raw("--db", db_url, "user", "forget", "42", "--yes"))
    assert "4 user lines in 2 rows of their channels (1001) carry no author id and could " \
        "not be checked; 'stm memory clear-channel CHANNEL --yes' removes them" in " ".join(
            done.stdout.split())

    # What docs/privacy.md tells the operator to do: clear the channel.
    ok(stm_raw("--db", db_url, "memory", "clear-channel", "1001", "--yes"))
    assert not [line for line in await stored_lines(db_url) if "Alice" in line[0]]
