"""docs/concepts.md's "Where each rule lives" table stays true: every home
it names exists, and only the engine (and the cache itself) changes the cache.

The second rule is checked on the source: every method of every class in
``stm_core/engine/cache.py`` that changes its object's state (assigns to it, or
calls something that does: a container's changing method, or another such
method) is a mutator, and no module of ``stm_core`` or ``stm_plugins`` other
than ``engine.py`` and ``cache.py`` calls a method of that name, on any
receiver. Mutators are named so that no built-in container method shares a
name (else the check could not tell them apart)."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import stm_core

DOC = Path(__file__).parents[2] / "docs" / "concepts.md"
ROOT = Path(stm_core.__file__).parent
PLUGINS = ROOT.parent / "stm_plugins"
CACHE = ROOT / "engine" / "cache.py"
#: The modules that may change the cache.
CHANGERS = frozenset({ROOT / "engine" / "core.py", CACHE})
#: Methods of the built-in containers that change them.
CONTAINER_CHANGES = frozenset({
    "append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add",
    "discard", "remove", "move_to_end", "sort", "reverse", "__setitem__", "__delitem__"})
#: Every method name of the built-in containers (a mutator must not reuse one).
CONTAINER_NAMES = frozenset(n for kind in (dict, list, set) for n in dir(kind))


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


# -- the cache's mutators ----------------------------------------------------------------

def _root(node: ast.expr) -> str | None:
    """The name an attribute, subscript or call chain starts from."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        yield from node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        yield node.target
    elif isinstance(node, ast.Delete):
        yield from node.targets


def _flat(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _flat(item)
    else:
        yield target


def _own_names(method: ast.FunctionDef) -> set[str]:
    """``self`` and the local names bound to parts of it (``data = self._data``,
    ``view = self._view_for(key)``, ``for view in self.servers.values()``)."""
    own = {"self"}
    for node in ast.walk(method):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            values = (node.value.elts if isinstance(node.value, ast.Tuple) else [node.value])
            pairs = list(zip(_flat(node.targets[0]), values, strict=False))
        elif isinstance(node, ast.For | ast.comprehension):
            pairs = [(name, node.iter) for name in _flat(node.target)]
        for name, value in pairs:
            if (isinstance(name, ast.Name) and not isinstance(value, ast.Name)
                    and _root(value) == "self"):
                own.add(name.id)
    return own


def _changes_directly(method: ast.FunctionDef, mutators: set[str]) -> bool:
    own = _own_names(method)
    for node in ast.walk(method):
        for target in _targets(node):
            for part in _flat(target):
                if not isinstance(part, ast.Name) and _root(part) in own:
                    return True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and _root(node.func.value) in own
                and node.func.attr in CONTAINER_CHANGES | mutators):
            return True
    return False


def cache_mutators() -> set[str]:
    """Names of the methods of the cache's classes that change state."""
    tree = ast.parse(CACHE.read_text(encoding="utf-8"))
    methods = [m for c in tree.body if isinstance(c, ast.ClassDef)
               for m in c.body if isinstance(m, ast.FunctionDef)]
    mutators: set[str] = set()
    while True:  # until no method is added: mutators that call mutators
        found = {m.name for m in methods if m.name != "__init__"
                 and _changes_directly(m, mutators)}
        if found <= mutators:
            return mutators
        mutators |= found


def test_the_mutators_are_found() -> None:
    """The analysis sees the mutators it must (else the check below is empty)."""
    assert cache_mutators() >= {
        "apply", "forget_rows", "forget_row", "drop_scopes", "put_settings", "begin_load",
        "end_load", "mark", "expire_after", "drop_all", "fresh", "evict", "add_scope",
        "note_absent", "forget_older_than"}
    assert not cache_mutators() & {"peek", "covers", "holds_scope", "newest_first",
                                   "cached_record"}


def test_no_mutator_shares_a_name_with_a_container_method() -> None:
    assert sorted(cache_mutators() & CONTAINER_NAMES) == []


def cache_changes_outside_the_engine() -> list[str]:
    mutators = cache_mutators()
    found = []
    for path in sorted([*ROOT.rglob("*.py"), *PLUGINS.rglob("*.py")]):
        if path in CHANGERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in mutators):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} "
                             f".{node.func.attr}()")
    return found


def test_only_the_engine_changes_the_cache() -> None:
    assert cache_changes_outside_the_engine() == []


# -- docs/reliability.md's cache promises name real things --------------------------------

RELIABILITY = DOC.parent / "reliability.md"


def test_the_cache_promises_name_real_tests_settings_and_homes() -> None:
    from stm_core.engine.core import Engine
    from stm_core.settings import RULES

    text = RELIABILITY.read_text(encoding="utf-8")
    section = text.split("### What a long-lived store's cache promises", 1)[1].split("\n## ", 1)[0]
    tests = set(re.findall(r"`(test_\w+\.py)`", section))
    assert tests >= {"test_scope_rewrites.py", "test_clock_steps_back.py",
                     "test_warm_equals_cold.py"}
    for name in tests:
        assert (ROOT.parent / "tests" / "reliability" / name).exists(), name
    variables = {rule.var for rule in RULES.values()}
    assert set(re.findall(r"`(STM_\w+)`", section)) <= variables
    assert "`Engine.max_view_age_ms`" in section and hasattr(Engine, "max_view_age_ms")
