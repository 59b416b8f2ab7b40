"""The host guide's programs on native formats and models run as written and
print what the guide says they do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "host-guide.md"


def program_under(heading: str) -> str:
    """The first python block after ``heading`` in the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("```python\n", text.index(f"\n{heading}\n")) + len("```python\n")
    return text[start:text.index("```\n", start)]


@pytest.mark.parametrize(("heading", "printed"), [
    ("### Native message formats", "anthropic [(1, 'same_channel')]\n"
                                   "openai-responses [(1, 'same_channel')]\n"
                                   "gemini [(1, 'same_channel')]\n"),
    ("### Models", "gpt-4o True\no1-mini False\n"),
])
def test_the_program_prints_what_the_guide_says(tmp_path: Path, heading: str,
                                                printed: str) -> None:
    script = tmp_path / "program.py"
    script.write_text(program_under(heading), encoding="utf-8")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed
