"""Every documented example passes ``author_id`` on the user lines it records.

A user line recorded without its author's id cannot be found by
``stm user forget`` or ``stm user export``; a host copies what the README, the
guides and the examples show, so they all pass it. Checked on the code itself:
every ``HistoryMessage(...)`` call in a Python block of README.md and docs/,
and in the Python files of examples/, whose ``author_type`` is or may be
``"user"``.
"""

from __future__ import annotations

import ast

import pytest

from .test_code_blocks_run import BLOCKS, ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if "build" not in p.parts)
#: The literal ``author_type`` values of lines that are not a user's.
NOT_USER = {"persona", "other"}


def sources() -> list[tuple[str, str]]:
    """``(where, code)`` of every documented Python example."""
    return [(name, code) for name, _, code in BLOCKS] + [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in EXAMPLES]


def history_messages(code: str) -> list[ast.Call]:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, "<example>", "exec", flags=flags, dont_inherit=True)
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) == "HistoryMessage"
                 or getattr(node.func, "attr", None) == "HistoryMessage")]


def may_be_a_user_line(call: ast.Call) -> bool:
    author_type = next((k.value for k in call.keywords if k.arg == "author_type"), None)
    return not (isinstance(author_type, ast.Constant) and author_type.value in NOT_USER)


def lacks_author_id(call: ast.Call) -> bool:
    return may_be_a_user_line(call) and all(k.arg != "author_id" for k in call.keywords)


SOURCES = sources()


def test_the_examples_are_found() -> None:
    calls = {where: history_messages(code) for where, code in SOURCES}
    with_calls = {where.split(":")[0] for where, found in calls.items() if found}
    assert {"README.md", "docs/host-guide.md", "docs/tutorials/host-in-5-minutes.md",
            "examples/host-bots/host_loop.py"} <= with_calls


@pytest.mark.parametrize(("where", "code"), SOURCES, ids=[where for where, _ in SOURCES])
def test_every_user_line_has_its_author_id(where: str, code: str) -> None:
    missing = [call.lineno for call in history_messages(code) if lacks_author_id(call)]
    assert missing == [], f"{where}: HistoryMessage without author_id at lines {missing}"


@pytest.mark.parametrize(("call", "lacking"), [
    ('HistoryMessage(author_type="user", content="hi")', True),
    ('stm_core.HistoryMessage(author_type="user", content="hi")', True),
    ('HistoryMessage(author_type=kind, content="hi")', True),
    ('HistoryMessage(author_type="user", content="hi", author_id="42")', False),
    ('HistoryMessage(author_type="persona", content="hi")', False),
])
def test_the_check_tells_them_apart(call: str, lacking: bool) -> None:
    assert [lacks_author_id(c) for c in history_messages(call)] == [lacking]
