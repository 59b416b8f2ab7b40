"""Provider keys are read as hosts write them (DESIGN decision 20): a family, a
``family/model`` routing prefix, LiteLLM's provider names, or a router plus
``Turn.model``. An unknown key warns once and falls back to the ``"openai"``
format, as 0.1 gave it; only ``strict_providers`` makes it an error. Hooks that
0.1 had see the key exactly as the host wrote it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from stm_core import hookimpl
from stm_core.errors import ConfigurationError, UnknownProvider, ValidationError
from stm_core.models import Turn
from stm_core.plugins import create_plugin_manager
from stm_core.plugins import providers as formats
from stm_core.plugins.hooks import Hooks
from stm_core.plugins.providers import ProviderKey, provider_family, resolve_provider
from stm_core.settings import Settings
from stm_core.store import Stm, open_store

FORMATS_LOG = "stm.tool.formats"


@pytest.fixture(autouse=True)
def fresh_warnings() -> Iterator[None]:
    """Each test starts as a fresh process would: no key warned about yet."""
    formats._warned.clear()
    yield
    formats._warned.clear()


def hooks(*plugins: object) -> Hooks:
    return Hooks(create_plugin_manager(load_entrypoints=False, plugins=list(plugins)))


def turn(**changes: Any) -> Turn:
    values: dict[str, Any] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                              "provider": "openai"}
    values.update(changes)
    return Turn(**values)


@pytest.mark.parametrize(("provider", "model", "family", "resolved"), [
    ("anthropic", None, "anthropic", None),
    ("anthropic/claude-3-5-sonnet", None, "anthropic", "claude-3-5-sonnet"),
    (" Anthropic/Claude-3-5-Sonnet ", None, "anthropic", "Claude-3-5-Sonnet"),
    # Turn.model wins over the part after the slash.
    ("anthropic/claude-3-5-sonnet", "claude-3-opus", "anthropic", "claude-3-opus"),
    ("vertex_ai", "gemini-1.5-pro", "vertex", "gemini-1.5-pro"),
    ("vertex_ai_beta/gemini-2.0-flash", None, "vertex", "gemini-2.0-flash"),
    ("openrouter/anthropic/claude-3-5-sonnet", None, "openrouter",
     "anthropic/claude-3-5-sonnet"),
    ("openrouter", "anthropic/claude-3-5-sonnet", "openrouter", "anthropic/claude-3-5-sonnet"),
    ("litellm_proxy/gpt-4o", None, "litellm", "gpt-4o"),
    ("anthropic/", None, "anthropic", None),
    ("", None, "", None),
    ("", "gpt-4o", "", "gpt-4o"),
])
def test_a_key_resolves_to_its_family_and_model(provider: str, model: str | None,
                                                family: str, resolved: str | None) -> None:
    key = resolve_provider(provider, model)
    assert key == ProviderKey(provider=provider, family=family, model=resolved)
    assert provider_family(provider) == family


@pytest.mark.parametrize(("provider", "model", "field"), [
    (123, None, "provider"), (None, None, "provider"), (["anthropic"], None, "provider"),
    ("anthropic", 5, "model"), ("anthropic", ["claude"], "model"), (b"openai", None, "provider"),
])
def test_hostile_keys_are_validation_errors(provider: Any, model: Any, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        resolve_provider(provider, model)
    assert caught.value.field == field
    if field == "provider":
        with pytest.raises(ValidationError):
            provider_family(provider)


@pytest.mark.parametrize(("provider", "model", "fmt"), [
    ("anthropic/claude-3-5-sonnet", None, "anthropic"),
    ("Anthropic/claude-3-5-sonnet", None, "anthropic"),
    ("gemini/gemini-1.5-pro", None, "gemini"),
    ("openai/gpt-4o", None, "openai"),
    # LiteLLM's Vertex names, Gemini and Claude models.
    ("vertex_ai", "gemini-1.5-pro", "gemini"),
    ("vertex_ai", None, "gemini"),
    ("vertex_ai/gemini-1.5-pro", None, "gemini"),
    ("vertex_ai_beta/gemini-2.0-flash", None, "gemini"),
    ("vertex_ai/claude-3-5-sonnet@20240620", None, "anthropic"),
    # Bedrock's Anthropic models, by prefix or by Turn.model.
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", None, "anthropic"),
    ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
    # Routers speak the OpenAI API whatever the model they route to.
    ("openrouter", "anthropic/claude-3-5-sonnet", "openai"),
    ("openrouter/anthropic/claude-3-5-sonnet", None, "openai"),
    ("litellm", "anthropic/claude-3-5-sonnet", "openai"),
    ("litellm_proxy/claude-3-5-sonnet", None, "openai"),
    # LiteLLM's OpenAI-compatible providers.
    ("azure/gpt-4o", None, "openai"),
    ("azure_ai/mistral-large", None, "openai"),
    ("groq/llama3-70b-8192", None, "openai"),
    ("mistral/mistral-large-latest", None, "openai"),
    ("deepseek/deepseek-chat", None, "openai"),
    ("xai/grok-2", None, "openai"),
    ("ollama/llama3.1", None, "openai"),
    ("ollama_chat/llama3.1", None, "openai"),
    ("together_ai/meta-llama/Llama-3-70b-chat-hf", None, "openai"),
    ("fireworks_ai/accounts/fireworks/models/llama-v3-70b-instruct", None, "openai"),
    ("hosted_vllm/my-model", None, "openai"),
    ("lm_studio/qwen2.5", None, "openai"),
    ("nvidia_nim/meta/llama3-70b-instruct", None, "openai"),
])
def test_keys_as_hosts_write_them_get_their_familys_format(provider: str, model: str | None,
                                                           fmt: str) -> None:
    assert hooks().tool_format_for(provider, model, strict=True).key == fmt


@pytest.mark.parametrize(("provider", "model"), [
    ("bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0", None),  # Converse API
    ("vertex_ai/meta/llama-3.1-405b-instruct-maas", None),
    ("cohere/command-r-plus", None),
])
def test_models_with_no_built_in_format_are_unknown(provider: str, model: str | None) -> None:
    with pytest.raises(UnknownProvider):
        hooks().tool_format_for(provider, model, strict=True)


class ClaimsASlashedKey:
    """A 0.1-style format that claims a whole key with a slash in it."""

    @hookimpl
    def stm_register_tool_formats(self) -> list[Any]:
        from stm_core import ToolFormat

        return [ToolFormat(key="house", render=lambda s: {"house": s.name},
                           providers={"acme/v2"})]


def test_a_claim_of_the_whole_key_beats_its_family() -> None:
    assert hooks(ClaimsASlashedKey()).tool_format_for("acme/v2").key == "house"


async def test_the_keys_of_the_issue_are_offered_the_tool(stm: Stm) -> None:
    anthropic = await stm.tool_schema(turn(provider="anthropic/claude-3-5-sonnet"))
    assert anthropic is not None and "input_schema" in anthropic
    gemini = await stm.tool_schema(turn(provider="vertex_ai", model="gemini-1.5-pro"))
    assert gemini is not None and gemini["parameters"]["type"] == "OBJECT"


async def test_novelai_keeps_no_tool_and_no_nudge_whatever_the_key(stm: Stm) -> None:
    for provider in ("novelai", " NovelAI ", "novelai/kayra", "NOVELAI/clio"):
        assert await stm.tool_available(turn(provider=provider)) is False
        assert await stm.tool_schema(turn(provider=provider)) is None


def test_an_unknown_key_warns_once_and_gets_the_fallback(
        caplog: pytest.LogCaptureFixture) -> None:
    h = hooks()
    openai = h.tool_formats()["openai"]
    with caplog.at_level(logging.WARNING, logger=FORMATS_LOG):
        assert h.tool_format_for("textsynth", None) is openai
        assert h.tool_format_for("textsynth", "some-model") is openai
        assert h.tool_format_for("textsynth", None) is openai
        assert hooks().tool_format_for("textsynth", None).key == "openai"  # once per process
    warnings = [r for r in caplog.records if r.name == FORMATS_LOG]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    message = warnings[0].getMessage()
    assert "'textsynth'" in message and "'openai' format" in message
    assert "STM_STRICT_PROVIDERS" in message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=FORMATS_LOG):
        h.tool_format_for("antropic", None)  # another key: its own warning, with a guess
    (other,) = [r for r in caplog.records if r.name == FORMATS_LOG]
    assert "did you mean 'anthropic'" in other.getMessage()


def test_the_warned_keys_stay_bounded() -> None:
    h = hooks()
    for n in range(formats._WARNED_ENTRIES + 10):
        h.tool_format_for(f"unknown-{n}", None)
    assert len(formats._warned) <= formats._WARNED_ENTRIES


async def test_a_store_warns_and_offers_the_fallback(stm: Stm,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=FORMATS_LOG):
        schema = await stm.tool_schema(turn(provider="some-new-llm"))
        again = await stm.tool_schema(turn(provider="some-new-llm"))
    assert schema is not None and schema == again and schema["type"] == "function"
    assert len([r for r in caplog.records if r.name == FORMATS_LOG]) == 1


async def test_strict_providers_makes_an_unknown_key_an_error(backend_url: str) -> None:
    settings = Settings(strict_providers=True)
    async with open_store(backend_url, settings=settings, load_entrypoints=False) as stm:
        with pytest.raises(UnknownProvider, match="'some-new-llm'") as caught:
            await stm.tool_schema(turn(provider="some-new-llm"))
        assert caught.value.field == "provider"
        # Strictness is about unknown keys only: these keys are known.
        assert await stm.tool_schema(turn(provider="anthropic/claude-3-5-sonnet")) is not None
        assert await stm.tool_schema(turn(provider="some-new-llm"), "openai") is not None


def test_strict_providers_comes_from_the_environment() -> None:
    assert Settings.from_env({"STM_STRICT_PROVIDERS": "1"}).strict_providers is True
    assert Settings.from_env({}).strict_providers is False
    with pytest.raises(ConfigurationError, match="STM_STRICT_PROVIDERS"):
        Settings.from_env({"STM_STRICT_PROVIDERS": "sometimes"})
    with pytest.raises(ConfigurationError):
        Settings(strict_providers="yes")  # type: ignore[arg-type]


class Recorder:
    """What the hooks of 0.1 and the newer ones are given for a turn."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, object]] = []

    @hookimpl
    def stm_tool_available(self, provider: str, model: str | None) -> None:
        self.seen.append(("gate", provider, model))

    @hookimpl
    def stm_nudge_template(self, provider: str, model: str | None) -> None:
        self.seen.append(("nudge", provider, model))

    @hookimpl
    def stm_tool_description(self, provider: str, model: str | None) -> None:
        self.seen.append(("description", provider, model))

    @hookimpl
    def stm_prompt_macros(self, provider: str) -> None:
        self.seen.append(("macros", provider, None))

    @hookimpl
    def stm_tool_format(self, provider: str, model: str | None) -> None:
        self.seen.append(("format", provider, model))


async def test_hooks_of_0_1_see_the_key_as_written_and_the_format_rule_the_family(
        backend_url: str) -> None:
    recorder = Recorder()
    async with open_store(backend_url, plugins=[recorder], load_entrypoints=False) as stm:
        written = "Anthropic/claude-3-5-sonnet"
        ctx = await stm.build_context(turn(provider=written))
        schema = await stm.tool_schema(turn(provider=written))
    assert ctx is not None and schema is not None and "input_schema" in schema
    seen = set(recorder.seen)
    assert ("gate", written, "claude-3-5-sonnet") in seen
    assert ("description", written, "claude-3-5-sonnet") in seen
    assert ("macros", written, None) in seen
    assert ("format", "anthropic", "claude-3-5-sonnet") in seen
    assert {s[1] for s in seen if s[0] != "format"} == {written}
