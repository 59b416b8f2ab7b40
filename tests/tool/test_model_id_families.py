"""A model id passed as the provider key (llm-style, ``provider="gpt-4o-mini"``)
that plainly names its family is read as that family; a key nothing names
gets the fallback with one short warning line (DESIGN decision 20)."""

from __future__ import annotations

import logging

import pytest

from stm_core import hookimpl
from stm_core.models import Turn
from stm_core.plugins.providers import resolve_provider
from stm_core.store import open_store

# Each test starts as a fresh process would: no key warned about yet.
from .test_provider_keys import FORMATS_LOG, fresh_warnings, hooks

__all__ = ["fresh_warnings"]  # the autouse fixture, shared

@pytest.mark.parametrize(("key", "family"), [
    ("gpt-4o-mini", "openai"), ("GPT-4.1", "openai"), ("chatgpt-4o-latest", "openai"),
    ("o1", "openai"), ("o3-mini", "openai"), ("o4-mini-2025-04-16", "openai"),
    ("claude-3-5-sonnet-20241022", "anthropic"), (" Claude-Opus-4 ", "anthropic"),
    ("gemini-1.5-pro", "gemini"), ("gemini-2.0-flash", "gemini"),
])
def test_a_model_id_names_its_family(key: str, family: str,
                                     caplog: pytest.LogCaptureFixture) -> None:
    resolved = resolve_provider(key)
    assert (resolved.family, resolved.model) == (family, key.strip())
    assert resolve_provider(key, "pinned").model == "pinned"  # Turn.model still wins
    with caplog.at_level(logging.WARNING, logger=FORMATS_LOG):
        assert hooks().tool_format_for(key, None).key == family
    assert [r for r in caplog.records if r.name == FORMATS_LOG] == []


@pytest.mark.parametrize("key", ["gpt", "o1x", "ollama", "openrouter", "claude", "gemini",
                                 "gpt4all/foo", "textsynth", "anthropic/gpt-4o"])
def test_only_a_plain_model_id_is_read_as_one(key: str) -> None:
    """Words that merely begin like a model id, routing prefixes and families
    keep the reading they had."""
    before = key.strip().partition("/")[0].lower()
    assert resolve_provider(key).family == before


def test_a_plugin_claiming_the_whole_key_still_wins() -> None:
    from stm_core.plugin_types import ToolFormat

    class Claims:
        @hookimpl
        def stm_register_tool_formats(self) -> list[ToolFormat]:
            return [ToolFormat(key="house", render=lambda schema: {"house": schema.name},
                               providers=("gpt-house",))]

    assert hooks(Claims()).tool_format_for("gpt-house", None).key == "house"


async def test_a_store_offers_the_family_format_for_a_model_id() -> None:
    async with open_store("memory://", load_entrypoints=False) as stm:
        turn = Turn(user_id="42", channel_id="1", server_id="7", provider="claude-3-5-haiku")
        schema = await stm.tool_schema(turn)
    assert schema is not None and "input_schema" in schema  # Anthropic's declaration


def test_the_fallback_warning_is_one_short_line_naming_the_fallback(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=FORMATS_LOG):
        hooks().tool_format_for("mistrall-large", "m-1")
    (record,) = [r for r in caplog.records if r.name == FORMATS_LOG]
    line = record.getMessage()
    assert "\n" not in line and len(line) <= 200, (len(line), line)
    assert line.startswith("unknown provider 'mistrall-large' with model 'm-1'")
    assert "did you mean 'mistral'" in line
    assert "'openai' format" in line and "fallback" in line
    assert "STM_STRICT_PROVIDERS=1" in line
