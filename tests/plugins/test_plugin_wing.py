"""The plugin wing (``stm_core.plugins``) and the old paths of its modules.

Old paths keep working for a deprecation period: each warns once and is the
moved module itself. ``stm_core.plugin_types`` is public and stays, silently.
stm's own code imports only the new paths, and the wing's modules import one
another without a circle, at run time or for type checkers.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Each moved module's old path and its home.
MOVED = {
    "stm_core.plugin_loader": "stm_core.plugins.loader",
    "stm_core.hookimpl_checks": "stm_core.plugins.checks",
    "stm_core.dist_scan": "stm_core.plugins.dist_scan",
    "stm_core.introspect": "stm_core.plugins.introspect",
    "stm_core.tracing": "stm_core.plugins.tracing",
    "stm_core.cli_plugins": "stm_core.cli.plugins",
    "stm_core.cli_plugin_new": "stm_core.cli.plugins_new",
    "stm_core.plugin_scaffold": "stm_core.cli.scaffold",
    "stm_core.plugin_scaffold_templates": "stm_core.cli.scaffold_templates",
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_warns_and_is_the_moved_module(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}") as caught:
        __import__(old)  # an import statement's own call: the warning names this file
    assert sys.modules[old] is importlib.import_module(new)
    assert caught[0].filename == __file__


def test_names_read_through_an_old_path_are_the_moved_objects() -> None:
    sys.modules.pop("stm_core.plugin_loader", None)
    with pytest.warns(DeprecationWarning):
        from stm_core.plugin_loader import PluginOrigin, load_entrypoint_plugins
    from stm_core.plugins.loader import load_entrypoint_plugins as moved
    from stm_core.plugins.records import PluginOrigin as record

    assert (PluginOrigin, load_entrypoint_plugins) == (record, moved)


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
            import stm_core.plugins.types as home
            print(all(getattr(public, n) is getattr(home, n) for n in home.__all__),
                  public.__all__ == home.__all__)
        """)], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["True", "True"]


def test_stm_s_own_modules_and_the_plugins_command_use_no_old_path() -> None:
    skipped = sorted({*MOVED, "stm_core.moved"})
    code = f"""
        import importlib, pkgutil
        import hookspecs, stm_core, stm_plugins
        from click.testing import CliRunner
        for package in (stm_core, stm_plugins, hookspecs):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if info.name not in {skipped!r} and not info.name.startswith("stm_core.testing"):
                    importlib.import_module(info.name)
        from stm_core.cli import cli
        result = CliRunner().invoke(cli, ["plugins"], catch_exceptions=False)
        print(result.exit_code)
    """
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           textwrap.dedent(code)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


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
