"""Hook implementations pluggy would accept and then mishandle are caught when
the plugin registers (installed or registered in code); a gate answer that is
not a bool or None is logged and counts as abstaining."""

from __future__ import annotations

import logging
import types
import warnings
from typing import Any

import pytest

from hookspecs import hookimpl
from stm_core import Actor, Settings, open_store
from stm_core.errors import PluginError, PluginWarning
from stm_core.plugins import create_plugin_manager, register_host_plugin
from stm_core.plugins.hooks import Hooks
from stm_core.plugins.introspect import describe_plugins

from .conftest import FakeSite

ASYNC_GATE = '''
from hookspecs import hookimpl

@hookimpl
async def stm_tool_available(provider):
    return False
'''

ASYNC_PHRASING = '''
from hookspecs import hookimpl

@hookimpl
async def stm_nudge_template(provider, mode):
    return "[System: refresh]"
'''

DEFAULTED_UNKNOWN = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_available(provider, temperature=None):
    return None
'''

DEFAULTED_KNOWN = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_available(provider, has_tools=True):
    return None
'''

UNMARKED = '''
from hookspecs import hookimpl
from stm_core.plugins import stm_version  # imported, not defined here: not reported

def stm_tool_available(provider):
    return False if provider == "acme-lite" else None

@hookimpl
def stm_annotation_patterns():
    return [r"\\[typing\\]"]
'''

ODD_GATE = '''
from hookspecs import hookimpl

@hookimpl
def stm_tool_available(provider):
    return "no" if provider == "acme-lite" else None
'''


def install(site: FakeSite, source: str, name: str = "sloppy") -> None:
    site.module(name, source)
    site.distribution(f"stm-{name}", "0.2", {name: name})


@pytest.mark.parametrize("source, hook", [(ASYNC_GATE, "stm_tool_available"),
                                          (ASYNC_PHRASING, "stm_nudge_template")])
def test_an_async_def_implementation_fails_validation_naming_plugin_and_hook(
        fake_site: FakeSite, source: str, hook: str) -> None:
    install(fake_site, source)

    pm = create_plugin_manager()

    assert not pm.has_plugin("sloppy")
    [failure] = pm.load_failures
    assert failure.stage == "validate"
    assert f"{hook} is an async def" in failure.error
    # The built-in answer stands: the coroutine never reaches a caller.
    assert Hooks(pm).tool_available("acme", True, True, False) is True
    assert "refresh" not in Hooks(pm).nudge_template("acme", "summary")


def test_an_async_def_is_an_error_in_strict_mode_naming_the_distribution(
        fake_site: FakeSite) -> None:
    install(fake_site, ASYNC_GATE)

    with pytest.raises(PluginError, match=r"'sloppy' \(entry point sloppy of stm-sloppy 0.2\)"
                                          r".*stm_tool_available is an async def"):
        create_plugin_manager(strict=True)


@pytest.mark.parametrize("source, text", [
    (DEFAULTED_UNKNOWN, "asks for 'temperature', which the hook does not have"),
    (DEFAULTED_KNOWN, "'has_tools' has a default"),
])
def test_a_parameter_with_a_default_fails_validation(fake_site: FakeSite, source: str,
                                                     text: str) -> None:
    install(fake_site, source)

    pm = create_plugin_manager()

    [failure] = pm.load_failures
    assert "'sloppy'" in failure.origin.describe()
    assert failure.stage == "validate" and "stm_tool_available" in failure.error
    assert text in failure.error
    assert not pm.has_plugin("sloppy")
    pm.check_pending()


def test_an_unmarked_hook_function_is_a_warning_listed_by_stm_plugins(
        fake_site: FakeSite, caplog: pytest.LogCaptureFixture) -> None:
    install(fake_site, UNMARKED)

    with caplog.at_level(logging.WARNING, logger="stm.plugin_loader"):
        pm = create_plugin_manager()

    assert pm.has_plugin("sloppy") and pm.load_failures == []
    [info] = [i for i in describe_plugins(pm) if i.name == "sloppy"]
    [warning] = info.warnings
    assert "'stm_tool_available'" in warning and "not marked @hookimpl" in warning
    assert "stm_version" not in warning
    assert info.to_dict()["warnings"] == [warning]
    assert any("stm-sloppy 0.2" in r.getMessage() and "stm_tool_available" in r.getMessage()
               for r in caplog.records)


def test_an_unmarked_hook_function_is_an_error_in_strict_mode(fake_site: FakeSite) -> None:
    install(fake_site, UNMARKED)

    with pytest.raises(PluginError, match="'stm_tool_available' named like a hook but not"):
        create_plugin_manager(environ={"STM_STRICT_PLUGINS": "1"})


def test_in_code_checks_raise_or_warn_and_leave_the_manager_as_it_was() -> None:
    async def stm_tool_available(provider: str) -> bool:
        return False

    async_plugin = types.SimpleNamespace(stm_tool_available=hookimpl(stm_tool_available),
                                         __name__="async_plugin")
    pm = create_plugin_manager(load_entrypoints=False)
    before = list(pm.list_name_plugin())
    with pytest.raises(PluginError, match="'async_plugin' is invalid: stm_tool_available is "
                                          "an async def"):
        register_host_plugin(pm, async_plugin)
    assert not pm.has_plugin("async_plugin")
    assert list(pm.list_name_plugin()) == before
    assert Hooks(pm).tool_available("acme", True, True, False) is True

    class Unmarked:
        __name__ = "unmarked"

        def stm_nudge_template(self, provider: str) -> str:
            return "never called"

    with pytest.warns(PluginWarning, match="'stm_nudge_template' named like a hook"):
        pm = create_plugin_manager(load_entrypoints=False, plugins=[Unmarked()])
    assert pm.has_plugin("unmarked")
    with pytest.raises(PluginError, match="not marked @hookimpl"):
        create_plugin_manager(load_entrypoints=False, plugins=[Unmarked()], strict=True)


def test_keyword_only_and_star_parameters_are_refused() -> None:
    class KeywordOnly:
        @hookimpl
        def stm_tool_available(self, *, provider: str) -> None:
            return None

    class Star:
        @hookimpl
        def stm_prompt_macros(self, provider: str, **extra: Any) -> None:
            return None

    with pytest.raises(PluginError, match="'provider' is keyword-only"):
        create_plugin_manager(load_entrypoints=False, plugins=[KeywordOnly()])
    with pytest.raises(PluginError, match=r"stm_prompt_macros takes \*\*extra"):
        create_plugin_manager(load_entrypoints=False, plugins=[Star()])


def test_any_subset_of_the_real_parameters_is_accepted_in_any_order() -> None:
    class Subset:
        @hookimpl
        def stm_tool_available(self, stm_enabled: bool, provider: str) -> bool | None:
            return False if provider == "x" and stm_enabled else None

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = create_plugin_manager(load_entrypoints=False, plugins=[Subset()], strict=True)

    assert Hooks(pm).tool_available("x", True, True, False) is False


def test_no_built_in_plugin_trips_a_check() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = create_plugin_manager(load_entrypoints=False, strict=True)

    assert pm.plugin_warnings == {}


@pytest.mark.parametrize("answer", ["no", 0, "", [], "False"])
def test_a_gate_answer_that_is_not_a_bool_is_logged_and_abstains(
        answer: object, caplog: pytest.LogCaptureFixture) -> None:
    class Odd:
        __name__ = "odd_gate"

        @hookimpl
        def stm_tool_available(self, provider: str) -> object:
            return answer if provider == "acme-lite" else None

    pm = create_plugin_manager(load_entrypoints=False, plugins=[Odd()])
    with caplog.at_level(logging.WARNING, logger="stm.hooks"):
        verdict = Hooks(pm).tool_available("acme-lite", True, True, False)

    assert verdict is True
    [record] = caplog.records
    assert "'odd_gate'" in record.getMessage() and repr(answer) in record.getMessage()
    assert Hooks(pm).tool_available("acme-lite", True, False, False) is False  # real vetoes win


def test_an_installed_gate_answering_a_string_abstains(fake_site: FakeSite) -> None:
    install(fake_site, ODD_GATE)

    pm = create_plugin_manager()

    assert pm.has_plugin("sloppy")
    assert Hooks(pm).tool_available("acme-lite", True, True, False) is True


def test_a_wrapper_around_the_gate_is_not_reported_as_an_odd_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    class Wrapper:
        __name__ = "gate_wrapper"

        @hookimpl(wrapper=True)
        def stm_tool_available(self) -> Any:
            return (yield)

    class Odd:
        __name__ = "odd_gate"

        @hookimpl
        def stm_tool_available(self, provider: str) -> object:
            return "no"

    pm = create_plugin_manager(load_entrypoints=False, plugins=[Odd(), Wrapper()])
    with caplog.at_level(logging.WARNING, logger="stm.hooks"):
        assert Hooks(pm).tool_available("acme", True, True, False) is True

    assert ["odd_gate" in r.getMessage() for r in caplog.records] == [True]


@pytest.mark.parametrize("answer", ["yes", 1, "False"])
async def test_a_permission_policy_answering_nonsense_refuses_the_call(answer: object) -> None:
    class Sloppy:
        __name__ = "sloppy_policy"

        @hookimpl
        def stm_admin_permission(self) -> object:
            return answer

    async with open_store("memory://", settings=Settings(), plugins=[Sloppy()],
                          load_entrypoints=False) as stm:
        manager = Actor(user_id="9", can_manage=True)
        with pytest.raises(PluginError, match=rf"answered {answer!r}.*refusing "
                                              r"set_server_params"):
            await stm.admin.set_server_params("3001", refresh_cadence=3, actor=manager)
        assert (await stm.admin.server_params("3001")).refresh_cadence == 5


def test_module_plugins_are_parsed_as_pluggy_parses_them() -> None:
    """The manager answers for modules from their own dict (a start-up
    saving); every name of every built-in module gets pluggy's own answer."""
    import importlib
    import types

    import pluggy

    from stm_core.plugins import DEFAULT_PLUGINS, StmPluginManager

    ours, theirs = StmPluginManager(), pluggy.PluginManager("stm")
    module = types.ModuleType("odd_plugin")
    module.static_hook = staticmethod(lambda: None)  # type: ignore[attr-defined]
    module.not_a_hook = 3  # type: ignore[attr-defined]
    modules = [importlib.import_module(m) for m in DEFAULT_PLUGINS]
    checked = 0
    for plugin in [*modules, module]:
        for name in dir(plugin):
            assert ours.parse_hookimpl_opts(plugin, name) == \
                theirs.parse_hookimpl_opts(plugin, name), (plugin, name)
            checked += ours.parse_hookimpl_opts(plugin, name) is not None
    assert checked >= len(DEFAULT_PLUGINS)  # the hooks themselves were found


class MisspelledGate:
    @hookimpl
    def stm_tool_available(self, provder: str) -> bool | None:
        return None


MISSPELLED_MODULE = '''
from hookspecs import hookimpl

@hookimpl(specname="stm_nudge_template")
def nudge(provider, mdoe):
    return None
'''


def test_a_misspelled_parameter_names_the_close_match_and_the_hook_s_parameters() -> None:
    pm = create_plugin_manager(load_entrypoints=False)
    generation = pm.generation

    with pytest.raises(PluginError) as caught:
        register_host_plugin(pm, MisspelledGate(), name="gate")

    assert str(caught.value) == (
        "plugin 'gate' is invalid: stm_tool_available asks for 'provder', which the hook "
        "does not have (did you mean 'provider'? its parameters: explicit_long_term_intent, "
        "has_tools, model, provider, stm_enabled)")
    assert not pm.has_plugin("gate") and pm.generation >= generation
    pm.check_pending()


def test_a_misspelled_parameter_of_an_installed_plugin_is_recorded_with_the_hint(
        fake_site: FakeSite) -> None:
    install(fake_site, MISSPELLED_MODULE)

    pm = create_plugin_manager()

    [failure] = pm.load_failures
    assert failure.stage == "register"
    assert "stm_nudge_template asks for 'mdoe'" in failure.error
    assert "did you mean 'mode'?" in failure.error and "its parameters: " in failure.error
    assert not pm.has_plugin("sloppy")
