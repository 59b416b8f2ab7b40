"""What the output and the help say: a read command's ``--user`` does not
talk of writing, and ``memory history`` explains the gaps in its numbers."""

from __future__ import annotations

import pytest

from stm_core import HistoryMessage, PersonaResponse, Turn
from stm_core.store import open_store

from .conftest import RunStm, ok

WHERE = ("--server", "7", "--channel", "1001", "--persona", "1")


def user_help(stm_cli: RunStm, *command: str) -> str:
    text = ok(stm_cli(*command, "--help")).stdout
    start = text.index("--user ID")
    end = text.find("\n  -", start + 1)
    return " ".join(text[start:end].split())


@pytest.mark.parametrize("command", [("memory", "list"), ("memory", "view"),
                                     ("memory", "history"), ("context",)], ids=" ".join)
def test_a_read_command_s_user_help_writes_nothing(stm_cli: RunStm,
                                                   command: tuple[str, ...]) -> None:
    shown = user_help(stm_cli, *command)
    assert "writ" not in shown and "edit" not in shown, shown
    assert "Nothing is written" in ok(stm_cli("context", "--help")).stdout


def test_a_write_command_s_user_help_says_what_it_writes(stm_cli: RunStm) -> None:
    assert "whose own copy is written too" in user_help(stm_cli, "memory", "edit")


async def record_a_turn(url: str) -> None:
    async with open_store(url, load_entrypoints=False) as stm:
        turn = Turn(user_id="42", channel_id="1001", server_id="7", persona_id="1")
        await stm.record_turn(turn, [HistoryMessage(author_type="user", content="hi",
                                                    author_id="42")],
                              [PersonaResponse(content="hello", persona_name="Tomori",
                                               persona_id="1")])


async def test_history_explains_its_gaps(stm_cli: RunStm, db_arg: str) -> None:
    ok(stm_cli("memory", "edit", *WHERE, "--summary", "first"))
    await record_a_turn(db_arg)  # a write to the row that keeps no revision
    ok(stm_cli("memory", "edit", *WHERE, "--summary", "second"))
    revisions = ok(stm_cli("--json", "memory", "history", *WHERE)).json()["revisions"]
    assert [r["rev"] for r in revisions] == [3, 1]
    shown = " ".join(ok(stm_cli("memory", "history", *WHERE)).stdout.split())
    assert ("Revision numbers count every write to this memory, each recorded turn "
            "included; only summary and category changes are kept as revisions") in shown
    assert "the numbers have gaps" in " ".join(
        ok(stm_cli("memory", "history", "--help")).stdout.split())
