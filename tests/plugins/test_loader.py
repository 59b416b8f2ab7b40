"""Entry-point loading: tolerant by default, strict on request, names blocked
or allowed before anything is imported."""

from __future__ import annotations

import logging
import sys

import pytest

from stm_core.errors import PluginError
from stm_core.plugins import StmPluginManager, create_plugin_manager
from stm_core.plugins.hooks import Hooks

from .conftest import FakeSite
from .sources import (
    BAD_SIGNATURE_PLUGIN,
    GATE_PLUGIN,
    RAISING_PLUGIN,
    RENDER_PLUGIN,
    UNKNOWN_HOOK_PLUGIN,
)


def loaded_names(pm: StmPluginManager) -> set[str]:
    """Registered plugins other than the built-ins."""
    return {name for name, plugin in pm.list_name_plugin()
            if plugin is not None and not name.startswith("stm_plugins.")}


def test_a_bundle_registers_every_entry_point_with_its_distribution(fake_site: FakeSite) -> None:
    fake_site.module("acme_gate", GATE_PLUGIN)
    fake_site.module("acme_render", RENDER_PLUGIN)
    fake_site.distribution("stm-acme", "2.1", {"acme_gate": "acme_gate",
                                               "acme_render": "acme_render"})

    pm = create_plugin_manager()

    assert loaded_names(pm) == {"acme_gate", "acme_render"}
    origin = pm.origins["acme_render"]
    assert (origin.kind, origin.distribution, origin.version, origin.entry_point) == (
        "entrypoint", "stm-acme", "2.1", "acme_render")
    hooks = Hooks(pm)
    assert "digest" in hooks.render_modes()
    assert hooks.tool_available("acme-lite", True, True, False) is False
    assert pm.load_failures == []


def test_a_plugin_failing_at_import_is_recorded_and_the_others_still_load(
        fake_site: FakeSite, caplog: pytest.LogCaptureFixture) -> None:
    fake_site.module("good_gate", GATE_PLUGIN)
    fake_site.module("good_render", RENDER_PLUGIN)
    # Sorted by distribution: "a-first" loads before and "z-last" after the broken one.
    fake_site.distribution("a-first", "1.0", {"gate": "good_gate"})
    fake_site.distribution("m-broken", "0.3", {"broken": "module_that_is_not_installed"})
    fake_site.distribution("z-last", "1.0", {"render": "good_render"})

    with caplog.at_level(logging.WARNING, logger="stm.plugin_loader"):
        pm = create_plugin_manager()

    assert loaded_names(pm) == {"gate", "render"}
    [failure] = pm.load_failures
    assert failure.origin.name == "broken"
    assert failure.stage == "import"
    assert "ModuleNotFoundError" in failure.error
    assert "module_that_is_not_installed" in failure.error
    [record] = [r for r in caplog.records if "broken" in r.getMessage()]
    assert "m-broken 0.3" in record.getMessage()
    assert "ModuleNotFoundError" in record.getMessage()


@pytest.mark.parametrize("source, error", [
    (RAISING_PLUGIN, "RuntimeError: acme credentials missing"),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
])
def test_any_error_raised_while_importing_a_plugin_is_contained(
        fake_site: FakeSite, source: str, error: str) -> None:
    fake_site.module("exploding", source)
    fake_site.distribution("stm-exploding", "1.0", {"exploding": "exploding"})

    pm = create_plugin_manager()

    [failure] = pm.load_failures
    assert (failure.stage, failure.error) == ("import", error)


def test_a_bad_hook_signature_fails_registration_naming_plugin_and_hook(
        fake_site: FakeSite) -> None:
    fake_site.module("bad_sig", BAD_SIGNATURE_PLUGIN)
    fake_site.module("good_render", RENDER_PLUGIN)
    fake_site.distribution("stm-bad", "1.0", {"bad_sig": "bad_sig", "render": "good_render"})

    pm = create_plugin_manager()

    assert loaded_names(pm) == {"render"}
    [failure] = pm.load_failures
    assert failure.stage == "register" and "'bad_sig'" in failure.origin.describe()
    assert failure.error == (
        "stm_tool_available asks for 'temperature', which the hook does not have (its "
        "parameters: explicit_long_term_intent, has_tools, model, provider, stm_enabled)")
    assert not pm.has_plugin("bad_sig")


def test_an_unknown_hook_name_is_reported_with_a_suggestion_and_unregistered(
        fake_site: FakeSite) -> None:
    fake_site.module("typo", UNKNOWN_HOOK_PLUGIN)
    fake_site.distribution("stm-typo", "1.0", {"typo": "typo"})

    pm = create_plugin_manager()

    assert not pm.has_plugin("typo")
    [failure] = pm.load_failures
    assert failure.stage == "validate"
    assert failure.error == ("unknown hook 'stm_tool_availabel' "
                             "(did you mean 'stm_tool_available'?)")
    pm.check_pending()  # nothing left behind


@pytest.mark.parametrize("blocked", ["broken", "stm-broken", "STM_Broken"])
def test_blocked_names_are_never_imported(fake_site: FakeSite, blocked: str) -> None:
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.module("good_gate", GATE_PLUGIN)
    fake_site.distribution("stm-broken", "1.0", {"broken": "broken_mod"})
    fake_site.distribution("stm-good", "1.0", {"gate": "good_gate"})

    pm = create_plugin_manager(environ={"STM_DISABLED_PLUGINS": f"other, {blocked}"})

    assert "broken_mod" not in sys.modules
    assert pm.load_failures == []
    assert loaded_names(pm) == {"gate"}
    [skipped] = pm.skipped
    assert skipped.origin.name == "broken"
    assert skipped.reason == "disabled by STM_DISABLED_PLUGINS"
    assert pm.is_blocked("broken")


def test_block_argument_replaces_the_environment(fake_site: FakeSite) -> None:
    fake_site.module("good_gate", GATE_PLUGIN)
    fake_site.distribution("stm-good", "1.0", {"gate": "good_gate"})

    pm = create_plugin_manager(block=["gate"], environ={"STM_DISABLED_PLUGINS": ""})

    assert loaded_names(pm) == set()
    assert pm.skipped[0].reason == "disabled by block="


def test_the_allowlist_accepts_distribution_and_entry_point_names(fake_site: FakeSite) -> None:
    fake_site.module("a1", GATE_PLUGIN)
    fake_site.module("a2", RENDER_PLUGIN)
    fake_site.module("b1", RAISING_PLUGIN)
    fake_site.module("c1", GATE_PLUGIN)
    fake_site.distribution("stm-acme", "1.0", {"a1": "a1", "a2": "a2"})
    fake_site.distribution("stm-broken", "1.0", {"b1": "b1"})
    fake_site.distribution("stm-other", "1.0", {"c1": "c1"})

    pm = create_plugin_manager(environ={"STM_LOAD_PLUGINS": "stm_acme,c1"})

    assert loaded_names(pm) == {"a1", "a2", "c1"}
    assert "b1" not in sys.modules
    assert [(s.origin.name, s.reason) for s in pm.skipped] == [
        ("b1", "not listed in STM_LOAD_PLUGINS")]


def test_an_empty_allowlist_loads_no_entry_point_but_keeps_the_builtins(
        fake_site: FakeSite) -> None:
    fake_site.module("b1", RAISING_PLUGIN)
    fake_site.distribution("stm-broken", "1.0", {"b1": "b1"})

    pm = create_plugin_manager(environ={"STM_LOAD_PLUGINS": ""})

    assert loaded_names(pm) == set()
    assert "b1" not in sys.modules
    assert pm.has_plugin("stm_plugins.render_modes")
    assert pm.load_failures == []


def test_allow_argument_overrides_the_environment(fake_site: FakeSite) -> None:
    fake_site.module("a1", GATE_PLUGIN)
    fake_site.distribution("stm-acme", "1.0", {"a1": "a1"})

    pm = create_plugin_manager(allow=[], environ={"STM_LOAD_PLUGINS": "stm-acme"})

    assert loaded_names(pm) == set()
    assert pm.skipped[0].reason == "not listed in allow="


def test_a_name_in_a_list_that_matches_nothing_is_warned_about(
        fake_site: FakeSite, caplog: pytest.LogCaptureFixture) -> None:
    fake_site.module("a1", GATE_PLUGIN)
    fake_site.distribution("stm-acme", "1.0", {"a1": "a1"})

    with caplog.at_level(logging.WARNING, logger="stm.plugin_loader"):
        create_plugin_manager(environ={"STM_DISABLED_PLUGINS": "stm-acmee,stm_plugins.novelai"})

    messages = [r.getMessage() for r in caplog.records]
    assert any("'stm-acmee'" in m for m in messages)
    assert not any("novelai" in m for m in messages)  # a built-in's name is known


@pytest.mark.parametrize("how", ["env", "argument"])
def test_strict_mode_turns_a_load_failure_into_an_error(fake_site: FakeSite, how: str) -> None:
    fake_site.module("b1", RAISING_PLUGIN)
    fake_site.distribution("stm-broken", "0.9", {"b1": "b1"})
    kwargs: dict[str, object] = (
        {"environ": {"STM_STRICT_PLUGINS": "1"}} if how == "env" else {"strict": True})

    with pytest.raises(PluginError) as caught:
        create_plugin_manager(**kwargs)  # type: ignore[arg-type]

    message = str(caught.value)
    assert "'b1'" in message and "stm-broken 0.9" in message
    assert "RuntimeError: acme credentials missing" in message
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize("source, hook", [
    (UNKNOWN_HOOK_PLUGIN, "stm_tool_availabel"),
    (BAD_SIGNATURE_PLUGIN, "stm_tool_available"),
])
def test_strict_mode_rejects_invalid_plugins(fake_site: FakeSite, source: str, hook: str) -> None:
    fake_site.module("invalid", source)
    fake_site.distribution("stm-invalid", "1.0", {"invalid": "invalid"})

    with pytest.raises(PluginError, match=rf"'invalid'.*stm-invalid 1\.0.*\b{hook}\b"):
        create_plugin_manager(strict=True)


def test_two_distributions_using_one_entry_point_name_keep_the_first(
        fake_site: FakeSite) -> None:
    fake_site.module("first_gate", GATE_PLUGIN)
    fake_site.module("second_render", RENDER_PLUGIN)
    fake_site.distribution("stm-aaa", "1.0", {"acme": "first_gate"})
    fake_site.distribution("stm-bbb", "1.0", {"acme": "second_render"})

    pm = create_plugin_manager()

    assert pm.origins["acme"].distribution == "stm-aaa"
    [failure] = pm.load_failures
    assert failure.origin.distribution == "stm-bbb"
    assert "already used by 'acme' (entry point first_gate of stm-aaa 1.0)" in failure.error
    assert "second_render" not in sys.modules


def test_entry_points_of_other_groups_are_ignored(fake_site: FakeSite) -> None:
    fake_site.module("cli_ext", RAISING_PLUGIN)
    fake_site.distribution("some-tool", "1.0", {"ext": "cli_ext"}, group="console_scripts")

    pm = create_plugin_manager()

    assert loaded_names(pm) == set()
    assert pm.load_failures == [] and pm.skipped == []


def test_load_entrypoints_false_reads_no_metadata(fake_site: FakeSite) -> None:
    fake_site.module("b1", RAISING_PLUGIN)
    fake_site.distribution("stm-broken", "1.0", {"b1": "b1"})

    pm = create_plugin_manager(load_entrypoints=False, strict=True)

    assert pm.load_failures == [] and pm.skipped == []


def test_a_builtin_can_be_disabled_by_its_module_name(fake_site: FakeSite) -> None:
    pm = create_plugin_manager(block=["stm_plugins.novelai"])

    assert not pm.has_plugin("stm_plugins.novelai")
    assert Hooks(pm).tool_available("novelai", True, True, False) is True
    assert [s.origin.kind for s in pm.skipped] == ["builtin"]


def test_registration_order_is_fixed_whatever_the_metadata_order(fake_site: FakeSite) -> None:
    fake_site.module("p_gate", GATE_PLUGIN)
    fake_site.module("p_render", RENDER_PLUGIN)
    fake_site.distribution("stm-zzz", "1.0", {"z": "p_gate"})
    fake_site.distribution("stm-aaa", "1.0", {"a": "p_render"})
    forward = [n for n, _ in create_plugin_manager().list_name_plugin()]
    fake_site.distributions.reverse()
    for name in ("p_gate", "p_render"):
        sys.modules.pop(name, None)

    assert [n for n, _ in create_plugin_manager().list_name_plugin()] == forward
