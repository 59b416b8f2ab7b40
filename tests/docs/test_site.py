"""The docs site (mkdocs.yml) reaches every page, the README lists them, and
the tutorials' programs print what the tutorials say.

The links and anchors themselves are checked by the strict build (`make docs`,
run by `make test`)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mkdocs.config import load_config

from .test_code_blocks_run import FENCE, ROOT

DOCS = ROOT / "docs"
TUTORIALS = DOCS / "tutorials"


def nav_pages() -> list[str]:
    """Every page of the site's navigation, as a path under docs/."""
    config = load_config(str(ROOT / "mkdocs.yml"))
    pages: list[str] = []

    def walk(entries: object) -> None:
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict):
                for value in entry.values():
                    walk(value)
            elif isinstance(entry, str):
                pages.append(entry)
    walk(config["nav"])
    return pages


def test_every_page_is_in_the_navigation() -> None:
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    in_nav = set(nav_pages())
    assert on_disk - in_nav == set(), "pages missing from mkdocs.yml's nav"
    # changelog.md is CHANGELOG.md, published by the site's hook.
    assert in_nav - on_disk == {"changelog.md"}


def test_tutorials_come_first() -> None:
    assert nav_pages()[:5] == ["index.md", "tutorials/host-in-5-minutes.md",
                               "tutorials/plugin-in-5-minutes.md",
                               "tutorials/operator-tasks.md", "deployment.md"]


def test_the_readme_lists_every_page_and_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)", readme))
    expected = {f"docs/{page}" for page in nav_pages() if page != "changelog.md"}
    assert expected - linked == set()
    assert "make docs" in readme
    assert all((ROOT / path).is_file() for path in linked)


def program_and_output(page: Path) -> tuple[str, str]:
    """The page's Python program and the ```text block that shows its output."""
    blocks = {m["info"].split()[0]: m["code"] for m in FENCE.finditer(page.read_text())
              if m["info"].split()}
    return blocks["python"], blocks["text"]


@pytest.mark.parametrize("page", ["host-in-5-minutes.md", "plugin-in-5-minutes.md"])
def test_the_tutorial_prints_what_it_says(page: str, tmp_path: Path) -> None:
    program, output = program_and_output(TUTORIALS / page)
    script = tmp_path / "tutorial.py"
    script.write_text(program, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == output


def test_the_host_tutorial_keeps_the_window_it_passes(tmp_path: Path) -> None:
    """Its program passes the window the model saw, so the tutorial's own
    ``stm memory view`` shows the conversation, not only the newest line."""
    page = TUTORIALS / "host-in-5-minutes.md"
    program, _ = program_and_output(page)
    (tmp_path / "tutorial.py").write_text(program, encoding="utf-8")
    subprocess.run([sys.executable, "tutorial.py"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    (command,) = [line for line in page.read_text(encoding="utf-8").splitlines()
                  if line.startswith("stm ") and " memory view " in line]
    stm = Path(sys.executable).with_name("stm")
    done = subprocess.run([str(stm), "--json", *shlex.split(command)[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    lines = [(m["speaker_name"], m["content"]) for m in json.loads(done.stdout)["messages"]]
    assert lines == [("Alice", "Shall we paint the sky teal?"), ("Tomori", "Teal it is!"),
                     ("Alice", "And the sun?"), ("Tomori", "Sounds lovely!")]


def test_the_docs_call_the_recording_function_record_turn() -> None:
    """One name in what a newcomer reads first (``record_window`` is its alias)."""
    for path in [ROOT / "README.md", *TUTORIALS.glob("*.md"), ROOT / "examples" / "host-bots"
                 / "README.md", ROOT / "examples" / "host-bots" / "host_loop.py"]:
        assert "record_window" not in path.read_text(encoding="utf-8"), path


def test_the_site_shows_every_example_bot_source() -> None:
    """The tutorials' "example bots" lead to a page with their sources, each
    file included from examples/host-bots/ (the strict build fails on a
    missing one)."""
    page = (DOCS / "examples.md").read_text(encoding="utf-8")
    included = set(re.findall(r'^--8<-- "examples/host-bots/([^"]+)"$', page, re.MULTILINE))
    sources = {p.name for p in (ROOT / "examples" / "host-bots").glob("*.py")}
    assert included == sources
    tutorial = (TUTORIALS / "host-in-5-minutes.md").read_text(encoding="utf-8")
    assert "](../examples.md)" in tutorial
