"""The example plugin distributions, end to end, as a user would meet them.

Wheels of stm-core, ``examples/stm-acme`` (a bundle of three plugins),
``examples/stm-broken`` (fails at import), ``tests/plugins/distributions/stm-sloppy``
(hook implementations with mistakes stm must catch) and a plugin written by
``stm plugins new`` go into one local wheel folder, together with the wheels
of their ordinary dependencies. A fresh virtual environment installs the
plugins from that folder only (``pip install --no-index --find-links``), so
the ``stm-core`` the plugins depend on can only resolve to our wheel.
Everything below runs there, in subprocesses. The environment is built once
per test session.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

pytestmark = pytest.mark.slow

log = logging.getLogger("stm.tests.example_distribution")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOST_SCRIPT = Path(__file__).with_name("acme_host.py")
#: Distributions built from this repository, by directory.
LOCAL_DISTRIBUTIONS = {"stm-acme": EXAMPLES / "stm-acme", "stm-broken": EXAMPLES / "stm-broken",
                       "stm-sloppy": Path(__file__).parent / "distributions" / "stm-sloppy"}
#: What a wheel of stm needs from the project root (copied, so that building
#: leaves no build/ or egg-info directories in the working tree).
STM_SOURCES = ("pyproject.toml", "README.md", "hookspecs", "stm_core", "stm_plugins")
ACME_ENTRY_POINTS = {"acme_provider", "acme_tool_format", "acme_digest"}
SLOPPY_LOADED = {"sloppy_unmarked", "sloppy_odd_gate"}
SLOPPY_FAILED = {"sloppy_async_gate", "sloppy_default_arg"}
#: The plugin ``stm plugins new`` writes in the environment.
NEW_PLUGIN = "demo"
TEST_TOOLS = ("pytest>=8", "pytest-asyncio>=0.23")
PLUGIN_ENV = ("STM_LOAD_PLUGINS", "STM_DISABLED_PLUGINS", "STM_STRICT_PLUGINS",
              "STM_TRACE_PLUGINS", "STM_DEFAULT_RENDER_MODE")


@attrs.frozen(kw_only=True)
class PluginVenv:
    bin: Path
    acme_tests: Path
    new_plugin: Path
    wheels: Path
    work: Path

    def run(self, *args: str | Path, env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items()
                   if k not in PLUGIN_ENV and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        environ.update(env or {})
        return subprocess.run([str(a) for a in args], env=environ, cwd=cwd or self.work,
                              capture_output=True, text=True, timeout=300, check=False)

    def stm_plugins(self, **env: str) -> dict[str, Any]:
        result = self.run(self.bin / "stm", "plugins", "--json", env=env)
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    def host(self, render_mode: str, *providers: str, **env: str) -> dict[str, Any]:
        url = f"sqlite:///{self.work / f'host-{time.monotonic_ns()}.db'}"
        result = self.run(self.bin / "python", HOST_SCRIPT, url, render_mode, *providers,
                          env=env)
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data


def _check(cmd: Sequence[str | Path], cwd: Path) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                            timeout=600, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}",
                    pytrace=False)


def _copy_sources(sources: Path) -> None:
    (sources / "stm-core").mkdir(parents=True)
    for name in STM_SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, sources / "stm-core" / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, sources / "stm-core" / name)
    for name, path in LOCAL_DISTRIBUTIONS.items():
        shutil.copytree(path, sources / name,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))


def _offline_install(bin_dir: Path, wheels: Path, *requirements: str) -> None:
    _check([bin_dir / "python", "-m", "pip", "install", "--quiet", "--no-index",
            "--find-links", wheels, *requirements], cwd=wheels)


@pytest.fixture(scope="session")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> PluginVenv:
    started = time.monotonic()
    work = tmp_path_factory.mktemp("example-distributions")
    sources = work / "src"
    _copy_sources(sources)
    wheels = work / "wheels"
    # Our wheels, and the wheels of every dependency they and the test tools
    # have (from pip's cache or the index): the folder users would ship.
    _check([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", wheels,
            sources / "stm-core", *(sources / name for name in LOCAL_DISTRIBUTIONS),
            *TEST_TOOLS], cwd=work)
    built = time.monotonic()

    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    bin_dir = env_dir / "bin"
    # The plugins only: stm-core comes in as their dependency, from the folder.
    _offline_install(bin_dir, wheels, *LOCAL_DISTRIBUTIONS, *TEST_TOOLS)
    # A plugin started with the installed stm's own command, built and installed
    # from the folder like the others.
    _check([bin_dir / "stm", "plugins", "new", NEW_PLUGIN, "--concern", "gate",
            "--concern", "phrasing", "--concern", "render-mode", "--dir", work / "new-plugin"],
           cwd=work)
    _check([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
            wheels, work / "new-plugin"], cwd=work)
    _offline_install(bin_dir, wheels, f"stm-{NEW_PLUGIN}")
    log.info("example venv: wheels built in %.1fs, environment ready in %.1fs",
             built - started, time.monotonic() - started)
    return PluginVenv(bin=bin_dir, acme_tests=sources / "stm-acme", work=work,
                      new_plugin=work / "new-plugin", wheels=wheels)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in report["plugins"]}


def test_the_venv_has_stm_from_its_wheel_not_from_the_source_tree(
        plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "python", "-c",
                             "import stm_core, sys; print(stm_core.__file__, sys.prefix)")
    module_file, prefix = result.stdout.split()
    assert module_file.startswith(prefix)
    assert not module_file.startswith(str(ROOT))


def test_the_plugins_dependency_resolved_to_our_wheel_from_the_local_folder(
        plugin_venv: PluginVenv) -> None:
    script = ("import importlib.metadata as m, json; "
              "names = sorted(d.metadata['Name'].lower() for d in m.distributions()); "
              "print(json.dumps({'names': names, 'acme': m.requires('stm-acme'), "
              "'new': m.requires('stm-demo'), 'core': m.version('stm-core')}))")
    result = plugin_venv.run(plugin_venv.bin / "python", "-c", script)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)

    assert "stm-core>=0.1" in found["acme"] and "stm-core>=0.1" in found["new"]
    assert found["core"] == "0.1.0"
    # Not the unrelated "stm" of the package index, nor what it pulls in.
    assert not {"stm", "ttftree", "six"} & set(found["names"])
    # SQLite runs on the standard library: no aiosqlite comes with stm-core.
    assert "aiosqlite" not in found["names"]
    [core_wheel] = plugin_venv.wheels.glob("stm_core-0.1.0-*.whl")
    assert core_wheel.is_file()


def test_installed_plugins_are_listed_and_a_broken_one_does_not_stop_the_command(
        plugin_venv: PluginVenv) -> None:
    plugins = by_name(plugin_venv.stm_plugins())

    for name in ACME_ENTRY_POINTS:
        assert plugins[name]["status"] == "loaded"
        assert plugins[name]["kind"] == "entrypoint"
        assert (plugins[name]["distribution"], plugins[name]["version"]) == ("stm-acme", "0.1.0")
    assert plugins["acme_provider"]["hooks"] == [
        "stm_nudge_template", "stm_tool_available", "stm_tool_description"]
    assert plugins["acme_digest"]["provides"] == ["render mode acme_digest"]
    assert plugins["acme_tool_format"]["provides"] == ["tool format acme"]
    broken = plugins["broken"]
    assert (broken["status"], broken["distribution"]) == ("failed", "stm-broken")
    assert "ModuleNotFoundError" in broken["error"]
    assert "acme_sdk_that_is_not_installed" in broken["error"]
    assert plugins["stm_plugins.render_modes"]["status"] == "loaded"


def test_the_table_output_shows_the_failure_too(plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "stm", "plugins", env={"COLUMNS": "200"})

    assert result.returncode == 0, result.stderr
    assert "acme_digest" in result.stdout
    assert "failed" in result.stdout and "acme_sdk_that_is_not_installed" in result.stdout


@pytest.mark.parametrize("name", ["stm-broken", "broken"])
def test_a_disabled_plugin_is_not_imported(plugin_venv: PluginVenv, name: str) -> None:
    plugins = by_name(plugin_venv.stm_plugins(STM_DISABLED_PLUGINS=name))

    assert plugins["broken"]["status"] == "blocked"
    assert plugins["broken"]["error"] == "disabled by STM_DISABLED_PLUGINS"
    assert {n for n, p in plugins.items() if p["status"] == "failed"} == SLOPPY_FAILED
    assert plugins["acme_digest"]["status"] == "loaded"


def test_an_empty_allowlist_loads_no_installed_plugin(plugin_venv: PluginVenv) -> None:
    plugins = by_name(plugin_venv.stm_plugins(STM_LOAD_PLUGINS=""))

    entrypoints = {n: p["status"] for n, p in plugins.items() if p["kind"] == "entrypoint"}
    assert entrypoints == dict.fromkeys(
        [*ACME_ENTRY_POINTS, "broken", *SLOPPY_LOADED, *SLOPPY_FAILED, NEW_PLUGIN], "blocked")
    assert plugins["stm_plugins.render_modes"]["status"] == "loaded"


def test_strict_mode_makes_the_broken_plugin_an_error(plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "stm", "plugins",
                             env={"STM_STRICT_PLUGINS": "1"})

    assert result.returncode == 1
    assert "'broken'" in result.stderr and "stm-broken 0.1.0" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_acme_plugins_change_what_a_host_builds(plugin_venv: PluginVenv) -> None:
    # stm-broken stays installed and enabled: the host must work regardless.
    acme = plugin_venv.host("acme_digest")
    plain = plugin_venv.host("crude_summary", STM_DISABLED_PLUGINS="stm-acme")

    assert acme["tool_call_ok"] and plain["tool_call_ok"]
    # Render mode: one digest block instead of a memory block plus raw lines.
    [digest] = acme["acme"]["other_channels"]
    assert digest.count("[System:") == 1
    assert "Planning a heist.\nLatest: Assistant: \"Map packed.\"]" in digest
    [crude] = plain["acme"]["other_channels"]
    assert crude.count("[System:") == 2
    # Nudge phrasing for provider "acme"; other providers keep the default.
    assert acme["acme"]["nudge"].startswith("[System: Acme note-keeping:")
    assert plain["acme"]["nudge"] == acme["openai"]["nudge"]
    assert "Acme" not in acme["openai"]["nudge"]
    # Tool schema in the acme format for provider "acme".
    assert acme["acme"]["tool"]["action"] == "update_short_term_memory"
    assert [i["name"] for i in acme["acme"]["tool"]["inputs"]] == ["summary"]
    # Without the plugin that knows provider "acme", the host gets the fallback
    # (OpenAI's, as 0.1 gave it, with a warning; strict_providers makes it an
    # error, tests/tool/test_provider_keys.py).
    assert plain["acme"]["tool"] == acme["openai"]["tool"]
    assert acme["openai"]["tool"]["type"] == "function"
    # The acme-lite gate: no tool, no nudge; without the plugin both are offered.
    assert acme["acme-lite"]["tool"] is None and acme["acme-lite"]["nudge"] is None
    assert plain["acme-lite"]["tool"] is not None and plain["acme-lite"]["nudge"] is not None


def test_the_example_plugin_passes_its_own_tests_with_the_test_kit(
        plugin_venv: PluginVenv) -> None:
    # As strict as the guide tells authors to be: deprecations are errors.
    result = plugin_venv.run(plugin_venv.bin / "python", "-m", "pytest", "-q",
                             "-p", "no:cacheprovider", "-W", "error::DeprecationWarning",
                             cwd=plugin_venv.acme_tests)

    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_hook_implementation_mistakes_are_caught_in_an_installed_distribution(
        plugin_venv: PluginVenv) -> None:
    plugins = by_name(plugin_venv.stm_plugins())

    assert {n for n in SLOPPY_FAILED if plugins[n]["status"] == "failed"} == SLOPPY_FAILED
    assert plugins["sloppy_async_gate"]["distribution"] == "stm-sloppy"
    assert "stm_tool_available is an async def" in plugins["sloppy_async_gate"]["error"]
    assert ("asks for 'temperature', which the hook does not have"
            in plugins["sloppy_default_arg"]["error"])
    unmarked = plugins["sloppy_unmarked"]
    assert unmarked["status"] == "loaded" and unmarked["hooks"] == ["stm_annotation_patterns"]
    [warning] = unmarked["warnings"]
    assert "'stm_nudge_template' named like a hook but not marked @hookimpl" in warning


def test_strict_mode_refuses_the_unmarked_hook_function(plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(
        plugin_venv.bin / "stm", "plugins",
        env={"STM_STRICT_PLUGINS": "1", "STM_LOAD_PLUGINS": "sloppy_unmarked"})

    assert result.returncode == 1
    assert "'sloppy_unmarked'" in result.stderr and "stm-sloppy 0.1.0" in result.stderr
    assert "not marked @hookimpl" in result.stderr


def test_a_gate_answering_a_string_is_logged_and_does_not_veto(plugin_venv: PluginVenv) -> None:
    script = ("import asyncio; from stm_core import open_store, Settings, Turn\n"
              "async def main():\n"
              "    async with open_store('memory://', settings=Settings()) as stm:\n"
              "        turn = Turn(user_id='1', channel_id='2', server_id='3', provider='sloppy')\n"
              "        print(await stm.tool_available(turn))\n"
              "asyncio.run(main())\n")
    result = plugin_venv.run(plugin_venv.bin / "python", "-c", script)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
    assert "plugin 'sloppy_odd_gate' answered stm_tool_available with 'no'" in result.stderr


def test_a_new_plugin_from_stm_plugins_new_is_listed_and_changes_what_a_host_builds(
        plugin_venv: PluginVenv) -> None:
    plugins = by_name(plugin_venv.stm_plugins())
    providers = (NEW_PLUGIN, f"{NEW_PLUGIN}-lite", "openai")
    compact = f"stm_{NEW_PLUGIN}_compact"

    new = plugins[NEW_PLUGIN]
    assert (new["status"], new["distribution"], new["warnings"]) == ("loaded", "stm-demo", [])
    assert new["provides"] == [f"render mode {compact}"]
    mine = plugin_venv.host(compact, *providers)
    plain = plugin_venv.host("crude_summary", *providers, STM_DISABLED_PLUGINS="stm-demo")

    assert mine[NEW_PLUGIN]["nudge"].startswith("[System: Demo note:")
    assert not plain[NEW_PLUGIN]["nudge"].startswith("[System: Demo note:")
    assert mine[f"{NEW_PLUGIN}-lite"]["tool"] is None
    assert plain[f"{NEW_PLUGIN}-lite"]["tool"] is not None
    [block] = mine[NEW_PLUGIN]["other_channels"]
    assert block.count("[System:") == 1 and "Planning a heist." in block
    [plain_block] = plain[NEW_PLUGIN]["other_channels"]
    assert plain_block.count("[System:") == 2


def test_a_new_plugin_passes_its_own_tests_against_the_installed_stm(
        plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "pytest", "-q", "-p", "no:cacheprovider",
                             "-W", "error::DeprecationWarning", cwd=plugin_venv.new_plugin)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
