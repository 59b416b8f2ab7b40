"""The plugin authors' test kit (``pytest_plugins = ["stm_core.testing"]``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.errors import PluginError
from stm_core.plugins import StmPluginManager, create_plugin_manager
from stm_core.store import Stm
from stm_core.testing import TURN_DEFAULTS, MakeTurn, RegisterPlugin


class NoToolsForAcme:
    name = "no-tools-for-acme"

    @hookimpl
    def stm_tool_available(self, provider: str) -> bool | None:
        return False if provider == "acme" else None


class Invalid:
    @hookimpl
    def stm_tool_available(self, provider: str, temperature: str) -> bool | None:
        return None


def test_the_plugin_manager_has_the_builtins_and_no_entry_points(
        stm_plugin_manager: StmPluginManager) -> None:
    names = [name for name, _ in stm_plugin_manager.list_name_plugin()]
    assert names[0] == "stm_plugins.sqlalchemy_storage"
    assert all(name.startswith("stm_plugins.") for name in names)


async def test_a_registered_plugin_reaches_an_already_open_store(
        stm_memory_store: Stm, register_plugin: RegisterPlugin, make_turn: MakeTurn) -> None:
    turn = make_turn(provider="acme")
    assert await stm_memory_store.tool_available(turn) is True

    pm = register_plugin(NoToolsForAcme())

    assert pm is stm_memory_store.pm
    assert await stm_memory_store.tool_available(turn) is False


def test_an_invalid_plugin_is_refused(register_plugin: RegisterPlugin) -> None:
    with pytest.raises(PluginError, match="stm_tool_available asks for"):
        register_plugin(Invalid())


async def test_the_store_runs_on_the_test_clock(stm_memory_store: Stm,
                                                stm_clock: ManualClock) -> None:
    before = stm_memory_store.clock.now_ms()
    stm_clock.advance(hours=2)
    assert stm_memory_store.clock.now_ms() - before == 2 * 3_600_000


def test_make_turn_has_defaults_and_takes_overrides(make_turn: MakeTurn) -> None:
    turn = make_turn(provider="anthropic", server_id=None)

    assert (turn.provider, turn.is_dm) == ("anthropic", True)
    assert turn.user_id == TURN_DEFAULTS["user_id"]
    assert make_turn() is not make_turn()  # one object per turn (the once-per-turn rule)


@pytest.fixture(scope="class")
def shared_plugin_manager() -> StmPluginManager:
    return create_plugin_manager(load_entrypoints=False)


class TestRegistrationIsUndoneAfterEachTest:
    """A manager shared by the class shows what teardown leaves behind."""

    @pytest.fixture
    def stm_plugin_manager(self, shared_plugin_manager: StmPluginManager) -> StmPluginManager:
        return shared_plugin_manager

    def test_register(self, register_plugin: RegisterPlugin) -> None:
        assert register_plugin(NoToolsForAcme()).has_plugin("no-tools-for-acme")

    def test_it_is_gone_in_the_next_test(self, stm_plugin_manager: StmPluginManager) -> None:
        assert not stm_plugin_manager.has_plugin("no-tools-for-acme")


def test_the_guide_lists_make_turns_defaults_as_they_are() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugins" / "guide.md").read_text()
    table = guide.split("`make_turn()` with no arguments", 1)[1].split("\n\n", 2)[1]
    rows = dict(re.findall(r"^\| `(\w+)` \| `(.+?)` \|$", table, re.MULTILINE))

    assert rows == {name: repr(value).replace("'", '"') for name, value in TURN_DEFAULTS.items()}
