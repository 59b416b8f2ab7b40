"""The example plugin distributions, end to end, as a user would meet them.

Wheels of stm, ``examples/stm-acme`` (a bundle of three plugins) and
``examples/stm-broken`` (fails at import) are built and installed into a fresh
virtual environment; everything below runs there, in subprocesses. The
environment is built once per test session.
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
#: What a wheel of stm needs from the project root (copied, so that building
#: leaves no build/ or egg-info directories in the working tree).
STM_SOURCES = ("pyproject.toml", "README.md", "hookspecs", "stm_core", "stm_plugins")
ACME_ENTRY_POINTS = {"acme_provider", "acme_tool_format", "acme_digest"}
PLUGIN_ENV = ("STM_LOAD_PLUGINS", "STM_DISABLED_PLUGINS", "STM_STRICT_PLUGINS",
              "STM_TRACE_PLUGINS")


@attrs.frozen(kw_only=True)
class PluginVenv:
    bin: Path
    acme_tests: Path
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

    def host(self, render_mode: str, **env: str) -> dict[str, Any]:
        url = f"sqlite+aiosqlite:///{self.work / f'host-{time.monotonic_ns()}.db'}"
        result = self.run(self.bin / "python", HOST_SCRIPT, url, render_mode, env=env)
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data


def _check(cmd: Sequence[str | Path], cwd: Path) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                            timeout=600, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}",
                    pytrace=False)


@pytest.fixture(scope="session")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> PluginVenv:
    started = time.monotonic()
    work = tmp_path_factory.mktemp("example-distributions")
    sources = work / "src"
    (sources / "stm").mkdir(parents=True)
    for name in STM_SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, sources / "stm" / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, sources / "stm" / name)
    for example in ("stm-acme", "stm-broken"):
        shutil.copytree(EXAMPLES / example, sources / example,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    wheels = work / "wheels"
    _check([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels,
            sources / "stm", sources / "stm-acme", sources / "stm-broken"], cwd=work)
    built = time.monotonic()

    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    bin_dir = env_dir / "bin"
    # stm comes from its wheel with its dependencies resolved as pip would for
    # a user; the examples are installed beside it.
    _check([bin_dir / "python", "-m", "pip", "install", "--quiet",
            *sorted(wheels.glob("*.whl")), "pytest>=8", "pytest-asyncio>=0.23"], cwd=work)
    log.info("example venv: wheels built in %.1fs, environment ready in %.1fs",
             built - started, time.monotonic() - started)
    return PluginVenv(bin=bin_dir, acme_tests=sources / "stm-acme", work=work)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in report["plugins"]}


def test_the_venv_has_stm_from_its_wheel_not_from_the_source_tree(
        plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "python", "-c",
                             "import stm_core, sys; print(stm_core.__file__, sys.prefix)")
    module_file, prefix = result.stdout.split()
    assert module_file.startswith(prefix)
    assert not module_file.startswith(str(ROOT))


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
    assert all(p["status"] != "failed" for p in plugins.values())
    assert plugins["acme_digest"]["status"] == "loaded"


def test_an_empty_allowlist_loads_no_installed_plugin(plugin_venv: PluginVenv) -> None:
    plugins = by_name(plugin_venv.stm_plugins(STM_LOAD_PLUGINS=""))

    entrypoints = {n: p["status"] for n, p in plugins.items() if p["kind"] == "entrypoint"}
    assert entrypoints == dict.fromkeys([*ACME_ENTRY_POINTS, "broken"], "blocked")
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
    # Without the plugin that knows provider "acme", it is reported, not sent
    # an OpenAI declaration.
    assert plain["acme"]["tool"] == {"error": "UnknownProvider"}
    assert acme["openai"]["tool"]["type"] == "function"
    # The acme-lite gate: no tool, no nudge; without the plugin both are offered.
    assert acme["acme-lite"]["tool"] is None and acme["acme-lite"]["nudge"] is None
    assert plain["acme-lite"]["tool"] is not None and plain["acme-lite"]["nudge"] is not None


def test_the_example_plugin_passes_its_own_tests_with_the_test_kit(
        plugin_venv: PluginVenv) -> None:
    result = plugin_venv.run(plugin_venv.bin / "python", "-m", "pytest", "-q",
                             "-p", "no:cacheprovider", cwd=plugin_venv.acme_tests)

    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout
