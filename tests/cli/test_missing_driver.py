"""Without asyncpg, every way to PostgreSQL (each ``stm`` command, a store
opened by a host) gives the same line naming what to install, as a typed
error, never ``ModuleNotFoundError``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stm_plugins.sqlalchemy_storage.driver import MISSING_DRIVER

from .conftest import RunStm, refused

URL = "postgresql+asyncpg://stm@127.0.0.1:1/nowhere"
COMMANDS = [
    ("db", "info"), ("db", "upgrade"), ("db", "upgrade", "--check"),
    ("server", "params", "show", "7"), ("server", "params", "set", "7", "--cadence", "3"),
    ("memory", "view", "--server", "7", "--channel", "1"), ("user", "export", "42"),
    ("user", "forget", "42", "--yes"), ("janitor", "--dry-run"),
    ("context", "--server", "7", "--channel", "1", "--user", "42"),
]


@pytest.fixture
def without_asyncpg(tmp_path: Path) -> dict[str, str]:
    """An interpreter where ``import asyncpg`` fails, as on a SQLite-only install."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import sys\nsys.modules['asyncpg'] = None\n")
    return {"PYTHONPATH": str(shim)}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_names_the_extra(stm_raw: RunStm, without_asyncpg: dict[str, str],
                                       command: tuple[str, ...]) -> None:
    line = refused(stm_raw("--db", URL, *command, env=without_asyncpg))
    assert line == f"stm: error: {MISSING_DRIVER}"


@pytest.mark.parametrize("opening", [
    "import asyncio\n"
    "async def main():\n"
    "    async with open_store(URL):\n"
    "        pass\n"
    "asyncio.run(main())",
    "open_store_sync(URL)",
])
def test_a_host_gets_the_same_typed_error(without_asyncpg: dict[str, str],
                                          opening: str) -> None:
    program = ("from stm_core import open_store, open_store_sync\n"
               "from stm_core.errors import ConfigurationError\n"
               f"URL = {URL!r}\n"
               "try:\n"
               + "".join(f"    {line}\n" for line in opening.splitlines()) +
               "except ConfigurationError as exc:\n"
               "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", program], env=without_asyncpg,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == MISSING_DRIVER + "\n"
