"""``stm plugins new``: the files it writes, the names and places it refuses,
all-or-nothing writing, and several runs at once."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stm_core.cli.scaffold import PluginNames, parse_concerns, render_files, write_plugin
from stm_core.cli.scaffold_templates import CONCERNS
from stm_core.errors import ValidationError

from .conftest import stm_executable

LINT = ["--select", "E,F,W,I,UP,B,SIM,RUF", "--line-length", "100"]


def new(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([stm_executable(), "plugins", "new", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


def test_it_writes_a_complete_distribution_that_lints_clean(tmp_path: Path) -> None:
    result = new(tmp_path, "stm-shouty", "--concern", "gate", "--concern", "visibility")

    assert result.returncode == 0, result.stderr
    root = tmp_path / "stm-shouty"
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == [
        "README.md", "pyproject.toml", "stm_shouty/__init__.py", "tests/conftest.py",
        "tests/test_shouty.py"]
    pyproject = (root / "pyproject.toml").read_text()
    assert 'name = "stm-shouty"' in pyproject and '"stm-core>=0.1"' in pyproject
    assert '[project.entry-points.stm]\nshouty = "stm_shouty"' in pyproject
    assert 'asyncio_default_fixture_loop_scope = "function"' in pyproject
    module = (root / "stm_shouty" / "__init__.py").read_text()
    assert "def stm_tool_available(" in module and "def stm_visibility_policies(" in module
    assert "stm_nudge_template" not in module
    assert 'pytest_plugins = ["stm_core.testing"]' in (root / "tests/conftest.py").read_text()
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", *LINT, "."], cwd=root,
                          capture_output=True, text=True, timeout=60, check=False)
    assert lint.returncode == 0, lint.stdout


def test_a_fresh_plugin_s_tests_pass_before_it_is_installed(tmp_path: Path) -> None:
    concerns = [arg for key in CONCERNS for arg in ("--concern", key)]
    assert new(tmp_path, "stm-shouty", *concerns).returncode == 0
    root = tmp_path / "stm-shouty"
    pytest_command = Path(sys.executable).with_name("pytest")  # not `python -m`: no cwd on the path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    done = subprocess.run([str(pytest_command), "-q", "-p", "no:cacheprovider"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)

    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "failed" not in done.stdout
    not_installed = subprocess.run([sys.executable, "-c", "import stm_shouty"], cwd=tmp_path,
                                   env=env, capture_output=True, text=True, check=False)
    assert "ModuleNotFoundError" in not_installed.stderr


@pytest.mark.parametrize("concerns", [(), ("macros",), ("mentions", "permissions"),
                                      ("tool-format", "annotations", "render-mode")])
def test_every_concern_combination_renders_valid_python(concerns: tuple[str, ...]) -> None:
    files = render_files(PluginNames.parse("demo"), parse_concerns(concerns))

    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")
    expected = concerns or ("gate", "phrasing", "render-mode")
    assert files["pyproject.toml"].count("; ") == len(expected) - 1


@pytest.mark.parametrize("name", ["", "1abc", "Shouty!", "a b", "stm-", "../evil", "x" * 61,
                                  "-dash"])
def test_a_bad_name_is_refused_with_what_is_allowed(tmp_path: Path, name: str) -> None:
    result = new(tmp_path, "--", name)

    assert result.returncode == 2
    assert "not a usable plugin name" in result.stderr and "lowercase letters" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", [None, 3, b"shouty"])
def test_a_name_of_the_wrong_type_is_a_validation_error(name: object) -> None:
    with pytest.raises(ValidationError, match="must be a string"):
        PluginNames.parse(name)


def test_an_unknown_concern_is_refused(tmp_path: Path) -> None:
    result = new(tmp_path, "shouty", "--concern", "gates")

    assert result.returncode == 2 and "gates" in result.stderr and "gate" in result.stderr
    with pytest.raises(ValidationError, match="unknown hook concern"):
        parse_concerns(["gates"])


def test_an_existing_directory_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "stm-shouty"
    target.mkdir()
    (target / "mine.txt").write_text("keep me")

    result = new(tmp_path, "shouty")

    assert result.returncode == 2 and "already exists" in result.stderr
    assert [p.name for p in target.iterdir()] == ["mine.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert new(tmp_path, "shouty", "--dir", "empty").returncode == 0
    assert (empty / "pyproject.toml").exists()


KILL_ON_THIRD_FILE = """
import os, pathlib, signal, sys
from stm_core.cli import main
real, count = pathlib.Path.write_text, [0]
def dying(self, *args, **kwargs):
    count[0] += 1
    if count[0] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, *args, **kwargs)
pathlib.Path.write_text = dying
sys.argv = ["stm", "plugins", "new", "shouty"]
main()
"""


def test_a_run_killed_mid_way_leaves_no_half_written_plugin(tmp_path: Path) -> None:
    killed = subprocess.run([sys.executable, "-c", KILL_ON_THIRD_FILE], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, check=False)

    assert killed.returncode == -9
    assert not (tmp_path / "stm-shouty").exists()
    assert new(tmp_path, "shouty").returncode == 0  # the staging leftover is no obstacle
    assert (tmp_path / "stm-shouty" / "tests" / "test_shouty.py").exists()


def test_an_error_while_writing_removes_everything(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    files = render_files(PluginNames.parse("shouty"), parse_concerns(()))
    broken = {**files, "tests/\0bad.py": "x"}  # the OS refuses this name mid-way

    with pytest.raises(ValueError):
        write_plugin(tmp_path / "stm-shouty", broken)

    assert list(tmp_path.iterdir()) == []


def test_concurrent_runs_produce_one_whole_plugin(tmp_path: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: new(tmp_path, "shouty"), range(4)))

    assert sorted(r.returncode for r in results) == [0, 2, 2, 2]
    assert all("already exists" in r.stderr for r in results if r.returncode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stm-shouty"]
    files = render_files(PluginNames.parse("shouty"), parse_concerns(()))
    for relative, text in files.items():
        assert (tmp_path / "stm-shouty" / relative).read_text() == text
