"""docs/concepts.md's "Where each rule lives" table stays true: every home
it names exists, and only the engine (and the cache itself) changes the cache."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import stm_core

DOC = Path(__file__).parents[2] / "docs" / "concepts.md"
ROOT = Path(stm_core.__file__).parent
#: The cache's changes; only these modules may make them.
CACHE_CHANGES = frozenset({"apply", "forget", "forget_older_than", "drop_scopes", "put_settings",
                           "put_prefs", "note_absent", "begin_load", "end_load"})
CHANGERS = frozenset({"engine/core.py", "engine/cache.py"})


def homes() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## Where each rule lives", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`" in line]
    return [name for row in rows for name in re.findall(r"`(stm_core\.[\w.]+)`",
                                                        row.split("|")[2])]


def resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            found = getattr(found, attr)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_table_names_homes() -> None:
    assert len(homes()) >= 15


def test_every_home_in_the_table_exists() -> None:
    missing = []
    for name in homes():
        try:
            resolve(name)
        except (ModuleNotFoundError, AttributeError):
            missing.append(name)
    assert missing == []


def cache_changes_outside_the_engine() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).as_posix() in CHANGERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in CACHE_CHANGES):
                continue
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "cache":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} cache.{node.func.attr}")
    return found


def test_only_the_engine_changes_the_cache() -> None:
    assert cache_changes_outside_the_engine() == []
