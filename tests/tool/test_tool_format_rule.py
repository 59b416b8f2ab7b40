"""Which tool format a turn gets: the host's ``format=``, then an
``stm_tool_format`` plugin, then the provider family; an unknown or mistyped
provider is reported (an error in strict mode, read here; the warning and
fallback outside it are in test_provider_keys)."""

from __future__ import annotations

import pytest

from stm_core import ToolFormat, hookimpl
from stm_core.errors import PluginError, UnknownProvider, ValidationError
from stm_core.models import Turn
from stm_core.plugins import create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.store import Stm, open_store

FAMILIES = [
    ("openai", None, "openai"),
    (" OpenAI ", "gpt-4o", "openai"),
    ("azure", "gpt-4o-mini", "openai"),
    # OpenRouter and LiteLLM speak the OpenAI API for every model they route to.
    ("openrouter", "anthropic/claude-3-5-sonnet", "openai"),
    ("litellm", "anthropic/claude-3-5-sonnet", "openai"),
    ("anthropic", "claude-3-5-sonnet-latest", "anthropic"),
    ("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic"),
    ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
    ("vertex", "claude-3-5-sonnet@20240620", "anthropic"),
    ("vertex", "gemini-1.5-pro", "gemini"),
    ("vertex", None, "gemini"),
    ("google", "gemini-2.0-flash", "gemini"),
    ("gemini", None, "gemini"),
    ("", None, "openai"),  # no provider stated: the documented default
]


def hooks(*plugins: object) -> Hooks:
    return Hooks(create_plugin_manager(load_entrypoints=False, plugins=list(plugins)))


@pytest.mark.parametrize(("provider", "model", "key"), FAMILIES)
def test_the_provider_family_picks_the_format(provider: str, model: str | None,
                                              key: str) -> None:
    assert hooks().tool_format_for(provider, model).key == key


@pytest.mark.parametrize(("provider", "model", "hint"), [
    ("antropic", "claude-3-5-sonnet", "did you mean 'anthropic'"),
    ("open-ai", None, "did you mean 'openai'"),
    ("bedrock", "meta.llama3-70b-instruct-v1:0", "'bedrock' with model 'meta.llama3"),
    ("vertex", "llama-3.1-405b", "'vertex' with model 'llama-3.1-405b'"),
    ("textsynth", None, "format="),
])
def test_an_unknown_or_mistyped_provider_is_a_typed_error(provider: str, model: str | None,
                                                          hint: str) -> None:
    with pytest.raises(UnknownProvider) as caught:
        hooks().tool_format_for(provider, model, strict=True)
    assert hint in str(caught.value)
    assert isinstance(caught.value, ValidationError) and caught.value.field == "provider"


def test_the_unknown_provider_error_reads_whole() -> None:
    with pytest.raises(UnknownProvider) as caught:
        hooks().tool_format_for("antropic", "claude-x", strict=True)
    known = caught.value.allowed
    assert known is not None and known.split(", ") == sorted(known.split(", "))
    assert str(caught.value) == (
        "no tool format is known for provider 'antropic' with model 'claude-x' (did you mean "
        "'anthropic', 'anthropic-vertex', 'anthropic-bedrock'?); pass tool_schema(turn, "
        "format=...) with a registered format key, or "
        f"teach stm the provider with an stm_tool_format plugin. Known providers: {known}")


def test_a_far_provider_gets_no_guess_and_no_model_text() -> None:
    with pytest.raises(UnknownProvider) as caught:
        hooks().tool_format_for("zzzz", None, strict=True)
    assert str(caught.value).startswith("no tool format is known for provider 'zzzz'; pass ")


def test_at_most_three_providers_are_suggested() -> None:
    from stm_core.plugins.providers import unknown_provider

    house = ToolFormat(key="house", render=lambda schema: {})
    claims = dict.fromkeys(("acme1", "acme2", "acme3", "acme4"), house)
    error = unknown_provider("acme", None, claims)
    assert "(did you mean 'acme4', 'acme3', 'acme2'?)" in str(error)  # closest first
    assert error.allowed == "acme1, acme2, acme3, acme4"


class GatewayFormats:
    """A gateway whose Claude models take Anthropic declarations, and a house format."""

    @hookimpl
    def stm_tool_format(self, provider: str, model: str | None) -> str | None:
        if provider == "acme-gateway":
            return "anthropic" if (model or "").startswith("claude") else "openai"
        if model == "house-model":
            return "house"
        return None

    @hookimpl
    def stm_register_tool_formats(self) -> list[ToolFormat]:
        return [ToolFormat(key="house", render=lambda s: {"house": s.name},
                           providers={"House-LLM"})]


def test_a_plugin_answer_beats_the_family_and_formats_claim_case_insensitively() -> None:
    h = hooks(GatewayFormats())
    assert h.tool_format_for("acme-gateway", "claude-3-haiku").key == "anthropic"
    assert h.tool_format_for("acme-gateway", "gpt-4o").key == "openai"
    assert h.tool_format_for("openai", "house-model").key == "house"
    assert h.tool_format_for("openai", "gpt-4o").key == "openai"
    assert h.tool_format_for("house-llm", None).key == "house"


class NamesNothing:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    @hookimpl
    def stm_tool_format(self) -> object:
        return self.answer


@pytest.mark.parametrize("answer", ["no-such-format", ["openai"], 42])
def test_a_plugin_naming_an_unregistered_format_is_a_plugin_error(answer: object) -> None:
    with pytest.raises(PluginError, match=repr(answer).replace("[", r"\[")):
        hooks(NamesNothing(answer)).tool_format_for("openai", None)


def turn(**changes: object) -> Turn:
    values: dict[str, object] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                                 "provider": "openai"}
    values.update(changes)
    return Turn(**values)  # type: ignore[arg-type]


async def test_the_hosts_format_beats_every_rule(backend_url: str) -> None:
    async with open_store(backend_url, plugins=[GatewayFormats()],
                          load_entrypoints=False) as stm:
        gateway = turn(provider="acme-gateway", model="claude-3-haiku")
        assert "input_schema" in (await stm.tool_schema(gateway) or {})
        assert (await stm.tool_schema(gateway, "gemini") or {})["parameters"]["type"] == "OBJECT"
        # Even an unknown provider is fine when the host names the format.
        explicit = await stm.tool_schema(turn(provider="antropic"), "anthropic")
        assert explicit is not None and "input_schema" in explicit


async def test_turns_that_get_no_tool_need_no_format(backend_url: str) -> None:
    strict = Settings(strict_providers=True)
    async with open_store(backend_url, settings=strict, load_entrypoints=False) as stm:
        assert await stm.tool_schema(turn(provider="novelai")) is None
        assert await stm.tool_schema(turn(provider="novelai/kayra")) is None
        assert await stm.tool_schema(turn(provider="antropic", has_tools=False)) is None
        with pytest.raises(UnknownProvider):
            await stm.tool_schema(turn(provider="antropic"))


@pytest.mark.parametrize("bad", [123, ["openai"], {"key": "openai"}, "", "OPENAI"])
async def test_hostile_format_keys_are_validation_errors(stm: Stm, bad: object) -> None:
    with pytest.raises(ValidationError) as caught:
        await stm.tool_schema(turn(), bad)  # type: ignore[arg-type]
    assert caught.value.field == "format" and "openai-responses-strict" in str(caught.value)
