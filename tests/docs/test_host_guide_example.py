"""The host guide's complete example, run for real, and kept identical to the guide."""

from __future__ import annotations

from pathlib import Path

from stm_core.models import Turn
from stm_core.settings import ENV_VARS, RULES
from stm_core.storage.records import MemoryKey
from stm_core.store import Stm, open_store

from . import host_example
from .host_example import converse, main

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "host-guide.md"
#: Every setting's row: variable, field, default, allowed values, meaning.
SETTINGS = DOCS / "settings.md"
START, END = "# -- start host-example --\n", "# -- end host-example --\n"
LIVE_KEY = MemoryKey.server("7", "1001", "1")


def example_source() -> str:
    source = Path(host_example.__file__).read_text(encoding="utf-8")
    return source[source.index(START) + len(START):source.index(END)]


def test_the_guide_shows_this_exact_code() -> None:
    assert "```python\n" + example_source() + "```" in GUIDE.read_text(encoding="utf-8")


def test_the_settings_reference_lists_every_environment_variable() -> None:
    reference = SETTINGS.read_text(encoding="utf-8")
    assert [name for name in ENV_VARS if f"| `{name}` |" not in reference] == []


def test_the_settings_reference_gives_each_variable_its_checked_range() -> None:
    rows = {line.split(" | ")[0].strip("| `"): line
            for line in SETTINGS.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")}
    assert [rule.var for rule in RULES.values()
            if f" | {rule.allowed} | " not in rows.get(rule.var, "")] == []


async def test_the_example_runs_a_conversation_through_the_store(stm: Stm) -> None:
    """Five turns fill the cadence; the sixth is nudged, the model writes its
    memory (counter reset), and recording that turn counts it again."""
    assert await converse(stm) == ["Sounds lovely!"] * 6
    live = await stm.adapter.get_memory(LIVE_KEY)
    assert live is not None
    assert live.summary == "Alice and Tomori talked about: what do you think?"
    assert live.turns_since_refresh == 1
    assert [m.content for m in live.messages][-2:] == ["what do you think?", "Sounds lovely!"]
    assert [m.author_id for m in live.messages][-2:] == ["42", None]
    ctx = await stm.build_context(Turn(user_id="42", channel_id="1001", server_id="7",
                                       persona_id="1", persona_lineage_id="1"))
    assert any("talked about" in item.text for item in ctx.memory_items)


async def test_main_runs_on_a_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    await main(url)
    async with open_store(url, load_entrypoints=False) as stm:
        live = await stm.adapter.get_memory(LIVE_KEY)
    assert live is not None and live.summary is not None
