"""The plugin tutorial's shell steps, as written: the scaffold is listed under
the name the tutorial gives, and its made-up provider can be previewed."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from .conftest import clean_env, stm_executable

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "plugin-in-5-minutes.md"


def commands() -> list[list[str]]:
    """The page's ``stm ...`` shell lines, comments dropped."""
    return [shlex.split(line, comments=True) for line in PAGE.read_text().splitlines()
            if line.startswith("stm ")]


def install(package: Path, site: Path) -> None:
    """What ``pip install`` leaves for the entry point: the package and its
    dist-info, on a path the command imports from."""
    pyproject = (package / "pyproject.toml").read_text()
    group = re.search(r"\[project\.entry-points\.stm\]\n(\w+) = \"(\w+)\"", pyproject)
    assert group is not None
    name, module = group.groups()
    shutil.copytree(package / module, site / module)
    info = site / "stm_tiny-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stm-tiny\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[stm]\n{name} = {module}\n")


def test_the_tutorial_names_the_plugin_as_listed_and_previews_its_provider(
        tmp_path: Path) -> None:
    new, listing, preview = commands()
    env = clean_env(tmp_path / "xdg", {"PYTHONPATH": str(tmp_path / "site")})

    def stm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([stm_executable(), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    assert stm(*new[1:]).returncode == 0
    install(tmp_path / "stm-tiny", tmp_path / "site")

    listed = stm("--json", *listing[1:])
    names = [p["name"] for p in json.loads(listed.stdout)["plugins"]
             if p["kind"] == "entrypoint"]
    assert names == ["tiny"]
    said = re.search(r"stm plugins +# lists (\S+)", PAGE.read_text())
    assert said is not None and said[1] == "tiny"

    shown = stm("--json", *preview[1:])
    assert shown.returncode == 0, shown.stderr
    schema = json.loads(shown.stdout)["tool_schema"]
    assert schema["description"] == "Keep short notes about this conversation."
    assert schema["description"] in " ".join(PAGE.read_text().split())
    (warning,) = [line for line in shown.stderr.splitlines() if "stm.tool.formats" in line]
    assert "unknown provider 'tiny'" in warning and "fallback" in warning
