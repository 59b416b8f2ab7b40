"""Modules that moved keep their old import paths for a deprecation period:
each warns once and is the moved module itself, and stm's own code imports
only the new paths."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

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
    "stm_core.names": "stm_core.name_maps",
    "stm_core.expiry": "stm_core.memory_ttl",
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
