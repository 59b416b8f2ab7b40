"""The plugin author guide (docs/plugins/guide.md) and the hook policy
(docs/hook-policy.md) show only tested code.

Each code block is preceded by ``<!-- snippet: NAME -->`` and must equal the
lines between ``# -- start NAME --`` and ``# -- end NAME --`` in a tested
file (this directory, or the example distribution). The tests below run what
the snippets do.
"""

from __future__ import annotations

import logging
import re
import textwrap
from pathlib import Path

import pytest
import stm_scratch
from my_bot import textsynth_may_use_the_tool
from my_traced_bot import traced_plugin_manager

from stm_core.plugins.hooks import Hooks
from stm_core.store import open_store

ROOT = Path(__file__).resolve().parents[3]
GUIDE = ROOT / "docs" / "plugins" / "guide.md"
POLICY = ROOT / "docs" / "hook-policy.md"
SOURCES = [*Path(__file__).parent.glob("*.py"),
           ROOT / "examples" / "stm-acme" / "pyproject.toml",
           ROOT / "examples" / "stm-acme" / "tests" / "conftest.py"]
BLOCK = re.compile(r"(?:<!-- snippet: (?P<name>[\w-]+) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```",
                   re.DOTALL)
REGION = re.compile(r"^[ \t]*# -- start (?P<name>[\w-]+) --\n"
                    r"(?P<code>.*?)^[ \t]*# -- end (?P=name) --", re.DOTALL | re.MULTILINE)


def guide_blocks(doc: Path = GUIDE) -> list[tuple[str | None, str, str]]:
    return [(m["name"], m["lang"], m["code"]) for m in BLOCK.finditer(doc.read_text())]


def regions_in_tested_files() -> dict[str, str]:
    regions: dict[str, str] = {}
    for path in SOURCES:
        for match in REGION.finditer(path.read_text()):
            assert match["name"] not in regions, f"snippet {match['name']} defined twice"
            regions[match["name"]] = textwrap.dedent(match["code"])
    return regions


@pytest.mark.parametrize("doc", [GUIDE, POLICY], ids=lambda p: p.name)
def test_every_code_block_is_a_tested_snippet(doc: Path) -> None:
    untested = [code[:60] for name, lang, code in guide_blocks(doc)
                if name is None and lang != "console"]
    assert untested == []


@pytest.mark.parametrize("doc, name", [(doc, n) for doc in (GUIDE, POLICY)
                                       for n, _, _ in guide_blocks(doc) if n])
def test_the_snippet_in_the_docs_is_the_tested_code(doc: Path, name: str) -> None:
    [code] = [c for n, _, c in guide_blocks(doc) if n == name]
    assert code == regions_in_tested_files()[name]


async def test_registering_in_code_applies_the_plugins_gate() -> None:
    assert await textsynth_may_use_the_tool() is False


async def test_the_scratch_adapter_is_opened_by_its_url_scheme() -> None:
    async with open_store("scratch://", plugins=[stm_scratch], load_entrypoints=False) as stm:
        assert isinstance(stm.adapter, stm_scratch.ScratchAdapter)
        assert stm.adapter.memory_writes == 0


def test_the_trace_shown_in_the_guide_is_what_tracing_logs(
        caplog: pytest.LogCaptureFixture) -> None:
    import stm_shouty

    logging.getLogger("stm.trace").setLevel(logging.NOTSET)
    pm = traced_plugin_manager()
    pm.register(stm_shouty, name="stm_shouty")
    with caplog.at_level(logging.DEBUG, logger="stm.trace"):
        Hooks(pm).tool_available("textsynth", True, True, False)

    logged = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.name == "stm.trace"]
    [shown] = [code for _, lang, code in guide_blocks()
               if lang == "console" and "stm.trace:" in code]
    assert logged == shown.splitlines()
