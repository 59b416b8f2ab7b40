"""Every Python code block in README.md and docs/ runs as written.

Each block is a complete program: it is saved to a file of its own and run
with a fresh interpreter in an empty directory (where an example may create
its ``bot.db``), with the guide's plugin modules (``stm_shouty``,
``stm_scratch``) importable, as a reader who saved them would have them.
A block that is not meant to run says so in its fence: ```` ```python fragment ````.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SNIPPET_MODULES = ROOT / "tests" / "plugins" / "snippets"
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```$", re.DOTALL | re.MULTILINE)
#: Fence info of a block that is shown, not run (kept few).
NOT_RUN = "fragment"
MAX_FRAGMENTS = 4


def python_blocks() -> list[tuple[str, str, str]]:
    """``(id, info, code)`` of every Python block, ``id`` being file:line."""
    blocks = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            words = match["info"].split()
            if words and words[0] == "python":
                line = text.count("\n", 0, match.start()) + 1
                blocks.append((f"{doc.relative_to(ROOT)}:{line}", match["info"], match["code"]))
    return blocks


BLOCKS = python_blocks()
#: A block that only includes a repository file (``--8<-- "examples/..."``,
#: docs/examples.md) shows a program tested where it lives (tests/examples).
INCLUDE = re.compile(r'\A(?:--8<-- "[^"]+"\n)+\Z')
RUNNABLE = [(name, code) for name, info, code in BLOCKS
            if NOT_RUN not in info.split() and not INCLUDE.match(code)]


def test_blocks_are_found_and_fragments_are_few() -> None:
    assert len(BLOCKS) >= 30
    fragments = [name for name, info, _ in BLOCKS if NOT_RUN in info.split()]
    assert len(fragments) <= MAX_FRAGMENTS, fragments


@pytest.mark.parametrize(("name", "code"), RUNNABLE, ids=[name for name, _ in RUNNABLE])
def test_the_block_runs(name: str, code: str, tmp_path: Path) -> None:
    program = tmp_path / "block.py"
    program.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STM_", "SHORT_TERM_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(SNIPPET_MODULES), str(ROOT)])
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-3000:]}"
