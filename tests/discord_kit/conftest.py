"""The kit's bot, with the real discord.py client, on a loopback fake of Discord.

``run`` opens the store on ``kit_db_url``: a SQLite file (the commands' and
the mapping's rules do not depend on the database); the message loop's module
takes the suite's ``db_url`` instead, a SQLite file and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stm_discord import open_store
from stm_discord.testing.scripted_model import ScriptedModel
from stm_discord.testing.world import Running, fake_discord, running_bot


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def kit_db_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"


@pytest.fixture
async def run(model: ScriptedModel, kit_db_url: str) -> AsyncIterator[Running]:
    async with fake_discord() as fake, \
            open_store(kit_db_url, load_entrypoints=False) as stm, \
            running_bot(fake, stm, model.router()) as running:
        yield running
