"""The example bot and its tutorial: the same code, short, and it rehearses
offline as a newcomer runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "discord-bot" / "bot.py"
TUTORIAL = ROOT / "docs" / "tutorials" / "discord-bot-in-10-minutes.md"
#: The issue's bound on the author's own code (the popular reply-chain bots
#: spend about that on their context alone).
MAX_LINES = 60


def tutorial_bot() -> str:
    text = TUTORIAL.read_text(encoding="utf-8")
    [bot] = re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)
    return str(bot)


def test_the_tutorial_shows_the_example_bot_as_it_is() -> None:
    assert tutorial_bot() == EXAMPLE.read_text(encoding="utf-8")


def test_the_whole_bot_is_at_most_60_lines_of_code() -> None:
    code = [line for line in tutorial_bot().splitlines()
            if line.strip() and not line.strip().startswith("#")]
    assert len(code) <= MAX_LINES
    assert "44 lines" in TUTORIAL.read_text(encoding="utf-8")
    assert len(tutorial_bot().splitlines()) == 44


def test_the_example_rehearses_offline_in_an_empty_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STM_", "DISCORD_"))}
    env["COLUMNS"] = "200"
    done = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for line in [
        "#general Alice: please remember we paint the mural on Saturday",
        "↳ Tomori: Noted: we paint the mural on Saturday",
        "↳ Tomori: I hear you, Bob. I remember: we paint the mural on Saturday",
        "↳ Tomori: (only you can see this) You need the **Manage Server** permission",
        "↳ Tomori: Private channels: #secrets",
        "↳ Tomori: I hear you, Bob. I remember: I like pastels",
        "↳ Tomori: Short-Term Memory is **off**",
    ]:
        assert line in out, out
    # The tutorial shows what it prints.
    shown = re.search(r"^```text\n(.*?)^```$", TUTORIAL.read_text(encoding="utf-8"),
                      re.S | re.M)
    assert shown is not None
    for line in shown.group(1).splitlines():
        assert line in out.splitlines(), line
    # The party in the private thread never reached #general.
    general = [line for line in out.splitlines() if "Bob. I remember" in line]
    assert general and not any("party" in line for line in general)
    assert (tmp_path / "bot.db").exists()
