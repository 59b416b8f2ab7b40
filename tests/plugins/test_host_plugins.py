"""Plugins a host registers in code: they work with or without entry points,
and an invalid one is an error at once (host code is never tolerated silently)."""

from __future__ import annotations

from types import ModuleType

import pytest

from hookspecs import hookimpl
from stm_core.errors import PluginError
from stm_core.models import Turn
from stm_core.plugins import create_plugin_manager, register_host_plugin
from stm_core.plugins.hooks import Hooks
from stm_core.store import open_store

from .conftest import FakeSite
from .sources import GATE_PLUGIN

TURN = Turn(user_id="u1", channel_id="c1", server_id="s1", provider="acme", has_tools=True)


class AcmeNudge:
    """A host's own phrasing for provider "acme"."""

    name = "host-acme-nudge"

    @hookimpl
    def stm_nudge_template(self, provider: str, mode: str) -> str | None:
        return "[System: host nudge for {short_term_memory_tool}]" if provider == "acme" else None


class BadSignature:
    @hookimpl
    def stm_tool_available(self, provider: str, temperature: float) -> bool | None:
        return None


class UnknownHook:
    @hookimpl
    def stm_nudge_templat(self, provider: str) -> str | None:
        return None


async def test_a_host_plugin_works_without_entry_points(fake_site: FakeSite) -> None:
    fake_site.module("ep_gate", GATE_PLUGIN)
    fake_site.distribution("stm-acme", "1.0", {"ep_gate": "ep_gate"})

    async with open_store("memory://", plugins=[AcmeNudge()], load_entrypoints=False) as stm:
        assert stm.pm.has_plugin("host-acme-nudge")
        assert not stm.pm.has_plugin("ep_gate")
        assert stm.hooks.nudge_template("acme", "summary").startswith("[System: host nudge")
        assert stm.pm.origins["host-acme-nudge"].kind == "host"


async def test_a_host_plugin_works_beside_entry_points_and_is_called_first(
        fake_site: FakeSite) -> None:
    fake_site.module("ep_nudge", '''
from hookspecs import hookimpl

@hookimpl
def stm_nudge_template(provider, mode):
    return "[System: entry-point nudge]" if provider == "acme" else None
''')
    fake_site.distribution("stm-acme", "1.0", {"ep_nudge": "ep_nudge"})

    async with open_store("memory://", plugins=[AcmeNudge()], load_entrypoints=True) as stm:
        assert stm.pm.has_plugin("ep_nudge")
        # firstresult: the most recently registered (the host's) answers first.
        assert stm.hooks.nudge_template("acme", "summary").startswith("[System: host nudge")
        stm.pm.unregister(name="host-acme-nudge")
        assert stm.hooks.nudge_template("acme", "summary") == "[System: entry-point nudge]"


async def test_a_host_plugin_with_a_bad_signature_is_a_clear_error(fake_site: FakeSite) -> None:
    with pytest.raises(PluginError) as caught:
        async with open_store("memory://", plugins=[BadSignature()], load_entrypoints=False):
            pass  # pragma: no cover - never opened

    message = str(caught.value)
    assert "BadSignature" in message
    assert "stm_tool_available asks for 'temperature'" in message


def test_a_host_plugin_implementing_an_unknown_hook_is_a_clear_error() -> None:
    with pytest.raises(PluginError, match="unknown hook 'stm_nudge_templat' "
                                          r"\(did you mean 'stm_nudge_template'\?\)"):
        create_plugin_manager(load_entrypoints=False, plugins=[UnknownHook()])


def test_a_failed_registration_leaves_the_manager_as_it_was() -> None:
    pm = create_plugin_manager(load_entrypoints=False)
    before = [name for name, _ in pm.list_name_plugin()]

    for plugin in (BadSignature(), UnknownHook()):
        with pytest.raises(PluginError):
            register_host_plugin(pm, plugin)

    assert [name for name, _ in pm.list_name_plugin()] == before
    pm.check_pending()


def test_host_plugins_are_named_after_their_module_or_class() -> None:
    module = ModuleType("my_bot.stm_gate")
    exec(GATE_PLUGIN, module.__dict__)
    first, second = AcmeNudgeWithoutName(), AcmeNudgeWithoutName()

    pm = create_plugin_manager(load_entrypoints=False, plugins=[module, first, second])

    names = [name for name, _ in pm.list_name_plugin()]
    qualified = f"{__name__}.AcmeNudgeWithoutName"
    assert {"my_bot.stm_gate", qualified, f"{qualified}#2"} <= set(names)
    assert Hooks(pm).tool_available("acme-lite", True, True, False) is False


class AcmeNudgeWithoutName:
    @hookimpl
    def stm_tool_description(self, provider: str) -> str | None:
        return None


def test_registering_the_same_object_twice_is_an_error() -> None:
    plugin = AcmeNudge()
    pm = create_plugin_manager(load_entrypoints=False, plugins=[plugin])

    with pytest.raises(PluginError, match="cannot be registered"):
        register_host_plugin(pm, plugin, name="again")
