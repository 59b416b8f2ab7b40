"""STM_DEFAULT_RENDER_MODE: the render mode of every server that chose none,
checked against the registered modes when a store opens."""

from __future__ import annotations

import attrs
import pytest

from stm_core.errors import ConfigurationError
from stm_core.models import HistoryMessage, PersonaResponse
from stm_core.settings import Settings

from .support import GENERAL, GUILD, OpenStm, make_turn

SUMMARY = "Dragon spotted near the mill."


async def other_channel_block(open_stm: OpenStm, url: str, settings: Settings,
                              server_mode: str | None = None) -> tuple[str, str]:
    """The other-channel block of #quest after #general got a summary and a raw
    line, and the render mode the admin API reports for the server."""
    async with open_stm(url, settings=settings) as stm:
        if server_mode is not None:
            await stm.admin.set_server_params(GUILD, render_mode=server_mode)
        elsewhere = make_turn(channel_id=GENERAL)
        assert (await stm.apply_tool_call(elsewhere, {"summary": SUMMARY})).ok
        await stm.record_turn(
            elsewhere, [HistoryMessage(author_type="user", content="look!", speaker_name="Alice")],
            [PersonaResponse(content="A dragon!", persona_name="Tomori")])
        context = await stm.build_context(make_turn())
        [block] = [i.text for i in context.memory_items if i.kind == "other_channels"]
        return block, (await stm.admin.server_params(GUILD)).render_mode


@pytest.fixture
def url(backend_url: str) -> str:
    return backend_url


async def test_servers_without_a_mode_use_the_process_default(open_stm: OpenStm,
                                                              url: str) -> None:
    block, reported = await other_channel_block(
        open_stm, url, Settings(default_render_mode="supersede"))

    assert reported == "supersede"
    assert block.count("[System:") == 1 and block.endswith(f"{SUMMARY}]")


async def test_a_servers_own_mode_beats_the_default(open_stm: OpenStm, url: str) -> None:
    block, reported = await other_channel_block(
        open_stm, url, Settings(default_render_mode="supersede"), server_mode="crude_summary")

    assert reported == "crude_summary"
    assert block.count("[System:") == 2 and block.endswith('Tomori: "A dragon!"\n]')


async def test_an_unregistered_default_fails_when_the_store_opens(open_stm: OpenStm,
                                                                  url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"STM_DEFAULT_RENDER_MODE is 'headline', "
                                                 r"which no plugin registers; registered "
                                                 r"render modes: crude_summary, supersede"):
        async with open_stm(url, settings=Settings(default_render_mode="headline")):
            pass


def test_the_variable_is_read_from_the_environment() -> None:
    settings = Settings.from_env({"STM_DEFAULT_RENDER_MODE": " supersede "})

    assert settings.default_render_mode == "supersede" and settings.render_mode == "supersede"
    assert Settings.from_env({"STM_DEFAULT_RENDER_MODE": ""}).render_mode == "crude_summary"
    assert Settings().render_mode == "crude_summary"


@pytest.mark.parametrize("value", ["crude summary", "{mode}", "x" * 65, "-dash", "mode\nx"])
def test_a_malformed_value_is_a_configuration_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^STM_DEFAULT_RENDER_MODE=.* allowed: a key "):
        Settings.from_env({"STM_DEFAULT_RENDER_MODE": value})


@pytest.mark.parametrize("value", [3, b"supersede", ["supersede"]])
def test_a_value_of_the_wrong_type_in_code_is_a_configuration_error(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"^STM_DEFAULT_RENDER_MODE=.* allowed: a key "):
        attrs.evolve(Settings(), default_render_mode=value)
