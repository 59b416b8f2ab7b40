"""The plugin wing (``stm_core.plugins``): the package keeps the names the
module had, ``stm_core.plugin_types`` is public and stays, silently, and the
wing's modules import one another without a circle, at run time or for type
checkers. The old paths of its modules: tests/test_moved_paths.py."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

def test_the_plugins_package_keeps_every_name_the_module_had() -> None:
    import stm_core.plugins as package
    from stm_core.plugins import manager, records, registration

    before = {"DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "StmPluginManager",
              "create_plugin_manager", "register_host_plugin", "unknown_hook_impls",
              "stm_version", "plugin_name", "spec_hook_names", "STM_DISTRIBUTION"}
    assert before <= set(package.__all__)
    homes = (manager, records, registration)
    for name in package.__all__:
        assert any(getattr(home, name, None) is getattr(package, name) for home in homes), name


def test_plugin_types_is_a_silent_public_path_to_the_same_objects() -> None:
    out = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", textwrap.dedent("""
            import stm_core.plugin_types as public
            import hookspecs.types as home
            print(all(getattr(public, n) is getattr(home, n) for n in home.__all__),
                  public.__all__ == home.__all__)
        """)], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["True", "True"]


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """Every stm module ``module`` imports, anywhere in its body (function-local
    and ``TYPE_CHECKING`` imports included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.update([sub] if sub in known else [base] if base in known else [])
    return found


def test_no_import_circle_runs_through_the_plugin_wing() -> None:
    files = {}
    for path in (ROOT / "stm_core").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {m: _imports(p, m, set(files)) for m, p in files.items()}
    wing = [m for m in graph if m.startswith(("stm_core.plugins", "stm_core.cli.plugins",
                                               "stm_core.cli.scaffold"))]
    assert len(wing) >= 13
    for start in wing:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            assert module != start, f"{start} imports itself through {sorted(seen)}"
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
