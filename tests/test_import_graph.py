"""The layers of ``stm_core`` read straight down: no import circle, and the
host's facade (``stm_core.store``) sits above everything it calls.

Every import counts: module level, under ``TYPE_CHECKING``, inside
functions, and the ones named in a string (``lazy_module("...")``,
``importlib.import_module("...")``), since each is a dependency a reader has
to follow. A package's ``__init__`` that runs only because a submodule is
imported is not counted (Python runs it for every submodule). The layers
themselves are the import contract in pyproject.toml, checked by
``lint-imports`` (tests/test_layers.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import stm_core

ROOT = Path(stm_core.__file__).parent
LAZY_IMPORTERS = frozenset({"lazy_module", "import_module"})
#: Circles allowed for now: none.
KNOWN_CIRCLES: list[frozenset[str]] = []
#: Modules below the facade: none of them may import it.
BELOW_THE_FACADE = ("stm_core.pipeline", "stm_core.tool", "stm_core.admin", "stm_core.engine")


def module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = ["stm_core", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


MODULES = module_names()


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:  # a submodule, else a name of the package itself
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in MODULES else base
    elif isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if (name in LAZY_IMPORTERS and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            yield node.args[0].value


def imports_of(module: str) -> set[str]:
    """The ``stm_core`` modules ``module`` imports, in any way."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        for name in _imported(node, module, path.name == "__init__.py"):
            if name in MODULES and name != module:
                found.add(name)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    """The reader sees function-local, TYPE_CHECKING and string-named imports."""
    assert "stm_core.engine.core" in GRAPH["stm_core.store"]
    assert "stm_core.admin.categories" in GRAPH["stm_core.admin.api"]
    assert "stm_core.cli.app" in GRAPH["stm_core.cli"]  # inside a function
    tangled = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(tangled) == [frozenset({"a", "b", "c"})]


def test_stm_core_has_no_import_circle() -> None:
    known = [group for group in KNOWN_CIRCLES if group <= MODULES.keys()]
    assert [group for group in circles(GRAPH) if group not in known] == []


def test_nothing_below_the_facade_imports_it() -> None:
    offenders = sorted(module for module, imported in GRAPH.items()
                       if module.startswith(BELOW_THE_FACADE) and "stm_core.store" in imported)
    assert offenders == []
