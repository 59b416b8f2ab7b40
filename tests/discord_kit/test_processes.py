"""Processes: a bot killed mid-conversation and started again on the same
database; stm without the Discord extra."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from stm_discord.testing.world import ALICE, BOB, BOT, GENERAL, fake_discord

ROOT = Path(__file__).resolve().parents[2]


async def start_bot(port: int, url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stm_discord.testing.serve", str(port), url, cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


async def test_a_restarted_bot_still_remembers(db_url: str) -> None:
    url = db_url
    async with fake_discord() as fake:
        first = await start_bot(fake.port, url)
        try:
            await fake.wait_ready(timeout=60)
            await fake.say(GENERAL.id, ALICE, "<@99> remember the mural is due Monday",
                           mentions=[BOT])
            [noted] = await fake.messages_in(GENERAL.id, 1, timeout=30)
            assert noted.content == "Noted: the mural is due Monday"
            # Killed mid-conversation: no clean shutdown.
            await fake.say(GENERAL.id, BOB, "<@99> and then?", mentions=[BOT])
            await fake.messages_in(GENERAL.id, 2, timeout=30)
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()
        await fake.disconnect_all()
        second = await start_bot(fake.port, url)
        try:
            await fake.wait_ready(timeout=60)
            await fake.say(GENERAL.id, BOB, "<@99> what is due?", mentions=[BOT])
            replies = await fake.messages_in(GENERAL.id, 3, timeout=30)
            assert replies[-1].content == ("I hear you, Bob. I remember: "
                                           "the mural is due Monday")
        finally:
            second.terminate()
            await second.wait()


#: Makes the Discord kit's packages absent, as in an install without the extra.
ABSENT = """
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('discord', 'stm_discord', 'aiohttp'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, Absent())
"""


def test_stm_works_without_the_extra_and_imports_no_discord(tmp_path: Path) -> None:
    """With discord.py absent, stm_core and stm_plugins (every built-in plugin,
    a store opened, a turn built and recorded) work, and nothing of discord
    was even looked for."""
    program = ABSENT + (
        "import asyncio\n"
        "import stm_core, stm_plugins\n"
        "from stm_core import open_store, Turn, HistoryMessage, PersonaResponse\n"
        "async def main():\n"
        f"    async with open_store('sqlite+aiosqlite:///{tmp_path / 'x.db'}') as stm:\n"
        "        turn = Turn(user_id=1, channel_id=2, server_id=3, provider='openai')\n"
        "        await stm.build_context(turn)\n"
        "        await stm.record_turn(turn, [HistoryMessage(author_type='user', content='hi',"
        " author_id=1)], [PersonaResponse(content='hello', persona_name='Bot')])\n"
        "asyncio.run(main())\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('discord', 'stm_discord', 'aiohttp'))\n"
        "assert not bad, bad\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STM_")}
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    # The blocker works: the kit itself cannot be imported under it.
    blocked = subprocess.run([sys.executable, "-c", ABSENT + "import stm_discord"],
                             cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120, check=False)
    assert "No module named 'stm_discord'" in blocked.stderr


def test_the_distribution_needs_discord_only_with_the_extra() -> None:
    """``pip install stm-core`` brings no discord: discord.py is required only
    under the ``discord`` extra (and the test extra)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if "discord" in d or "openai" in d]
    assert project["optional-dependencies"]["discord"][0] == "discord.py>=2.3,<3"


def test_no_module_of_stm_names_discord_or_the_kit() -> None:
    """Not even in a function or under TYPE_CHECKING: the core and the
    built-in plugins know nothing of discord.py (DESIGN decision 24)."""
    import ast

    found = []
    for package in ("stm_core", "stm_plugins", "hookspecs"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                found += [f"{path.relative_to(ROOT)}: {n}" for n in names
                          if n.split(".")[0] in ("discord", "stm_discord")]
    assert found == []
