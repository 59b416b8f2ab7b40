"""Modules that moved keep their old import paths for a deprecation period:
each warns once and is the moved module itself, and stm's own code imports
only the new paths."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import warnings

import pytest

from stm_core._util import moved_paths

#: The old paths 0.2 documented (docs/hook-policy.md) and where they lead now.
DOCUMENTED = {
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
    "stm_core.expiry": "stm_core.pipeline.memory_ttl",
}
MOVED = moved_paths.MOVED


def test_every_path_0_2_documented_is_in_the_table() -> None:
    assert DOCUMENTED.items() <= MOVED.items()


def test_a_moved_package_s_modules_follow_it() -> None:
    for name in ("stm_core.demo", "stm_core.demo.runner"):
        sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match="stm_core.demo.runner moved to "
                                                "stm_core.cli.demo.runner"):
        import stm_core.demo.runner as old
    import stm_core.cli.demo.runner as new

    assert old is new


def test_the_hook_types_path_plugin_authors_use_stays_without_a_warning() -> None:
    out = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c",
         "from stm_core.plugin_types import Actor; import hookspecs.types as t; "
         "print(Actor is t.Actor)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_path_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("stm_core.no_such_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("stm_core.demo.no_such_module")


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
    code = """
        import importlib, pkgutil
        import hookspecs, stm_core, stm_plugins
        from click.testing import CliRunner
        for package in (stm_core, stm_plugins, hookspecs):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if not info.name.startswith("stm_core.testing"):
                    importlib.import_module(info.name)
        from stm_core.cli import cli
        result = CliRunner().invoke(cli, ["plugins"], catch_exceptions=False)
        print(result.exit_code)
    """
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           textwrap.dedent(code)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
