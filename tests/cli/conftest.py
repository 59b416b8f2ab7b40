"""Run the installed ``stm`` console script in subprocesses, on a SQLite file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest


def stm_executable() -> str:
    beside = Path(sys.executable).parent / "stm"
    if beside.exists():
        return str(beside)
    found = shutil.which("stm")
    if found is None:
        pytest.fail("the stm console script is not installed (pip install -e .)")
    return found


@attrs.frozen
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


RunStm = Callable[..., Result]


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STM_", "SHORT_TERM_MEMORY_"))}
    env["XDG_DATA_HOME"] = str(home)
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "stm.db"


@pytest.fixture
def db_arg(db_file: Path) -> str:
    return f"sqlite+aiosqlite:///{db_file}"


@pytest.fixture
def stm_raw(tmp_path: Path) -> RunStm:
    """``stm_raw(*args, env=..., input=...)``: the command exactly as given."""
    exe = stm_executable()

    def run(*args: str, env: Mapping[str, str] | None = None,
            input: str | None = None) -> Result:
        done = subprocess.run([exe, *args], capture_output=True, text=True, input=input,
                              env=clean_env(tmp_path / "xdg", env), timeout=60,
                              cwd=tmp_path)
        return Result(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def stm_cli(stm_raw: RunStm, db_arg: str) -> RunStm:
    """``stm_cli(*args)``: ``stm --db <sqlite file> *args``."""

    def run(*args: str, **kwargs: Any) -> Result:
        return stm_raw("--db", db_arg, *args, **kwargs)

    return run


def ok(result: Result) -> Result:
    assert result.code == 0, f"exit {result.code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert "Traceback" not in result.stderr
    return result


def refused(result: Result, code: int = 2) -> str:
    """Assert an expected failure: the code, no traceback, a one-line message."""
    assert result.code == code, f"exit {result.code}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]
