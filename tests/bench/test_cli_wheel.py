"""The start-up figure times the command operators run: stm from a built
wheel, in a virtual environment of its own, with no development import hook."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from bench.scenarios_cli import wheel_command


def test_the_timed_command_runs_stm_from_its_wheel(tmp_path: Path) -> None:
    command, python = wheel_command(tmp_path)
    venv = tmp_path / "cli-venv"
    assert Path(command[0]).parent == venv / "bin"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    done = subprocess.run([*command, "--db", db, "db", "upgrade"], capture_output=True,
                          text=True, env=env, check=True)
    assert "schema" in done.stdout
    # What the command's interpreter imports stm from, and what it loads at start.
    probe = subprocess.run(
        [python, "-c", "import sys, stm_core; print(stm_core.__file__); "
                       "from stm_core._util.moved_paths import MovedPathFinder as own; "
                       "print('pathlib' in sys.modules, "
                       "len([f for f in sys.meta_path if f is not own]))"],
        cwd=tmp_path, capture_output=True, text=True, env=env, check=True).stdout.split()
    assert Path(probe[0]).is_relative_to(venv)
    # No editable-install finder on the meta path (stm's own finder of moved
    # paths aside), so no pathlib at start.
    assert probe[1:] == ["False", "3"]
