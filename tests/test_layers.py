"""The layers of stm_core are a contract (pyproject.toml, ``[tool.importlinter]``)
that ``lint-imports`` checks: every top-level module sits in one, and the top
level stays short enough to read as a table of contents."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import stm_core

ROOT = Path(__file__).resolve().parent.parent
#: The most modules and packages the top of stm_core may hold.
TOP_LEVEL_LIMIT = 18


def contract(contract_id: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    [found] = [c for c in contracts if c["id"] == contract_id]
    return dict(found)


def layered_names() -> set[str]:
    layers = contract("layers")["layers"]
    assert isinstance(layers, list)
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


def top_level() -> set[str]:
    return {info.name for info in pkgutil.iter_modules(stm_core.__path__)}


def test_every_top_level_module_of_stm_core_sits_in_a_layer() -> None:
    assert top_level() == layered_names()


def test_the_top_level_reads_as_a_table_of_contents() -> None:
    assert len(top_level()) <= TOP_LEVEL_LIMIT, sorted(top_level())


def test_the_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract can fail: the engine importing the facade is caught."""
    import shutil

    copy = tmp_path / "src"
    for package in ("stm_core", "hookspecs", "stm_plugins"):
        shutil.copytree(ROOT / package, copy / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    engine = copy / "stm_core" / "engine" / "janitor.py"
    engine.write_text(engine.read_text(encoding="utf-8") + "\nimport stm_core.store\n",
                      encoding="utf-8")
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=copy, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(copy), "PATH": ""})
    assert done.returncode != 0
    assert "stm_core.engine.janitor -> stm_core.store" in done.stdout
