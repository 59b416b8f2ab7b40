"""Two plugins claiming one key is an error naming both; describing the plugin
set reports it (and every failure) instead of crashing."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from click.testing import CliRunner

from hookspecs import hookimpl
from stm_core.cli.plugins import plugins as plugins_command
from stm_core.cli.state import CliState
from stm_core.errors import PluginError
from stm_core.plugin_types import RenderMode, StorageAdapterSpec, ToolFormat
from stm_core.plugins import create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.plugins.introspect import describe_plugins, find_conflicts
from stm_core.store import open_store
from stm_plugins.memory_storage import MemoryAdapter
from stm_plugins.tool_formats import openai

from .conftest import FakeSite
from .sources import GATE_PLUGIN, RAISING_PLUGIN, RENDER_PLUGIN


class DigestA:
    name = "digest-a"

    @hookimpl
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        return [RenderMode(key="digest", render=lambda parts: "")]


class DigestB(DigestA):
    name = "digest-b"


class MemoryClone:
    name = "memory-clone"

    @hookimpl
    def stm_register_storage_adapters(self) -> Iterable[StorageAdapterSpec]:
        return [StorageAdapterSpec(name="clone", schemes=("memory",),
                                   factory=lambda url, settings: MemoryAdapter(url))]


class OpenAIClaimer:
    name = "openai-claimer"

    @hookimpl
    def stm_register_tool_formats(self) -> Iterable[ToolFormat]:
        return [ToolFormat(key="openai-ish", render=openai, providers={"openai"})]


class RaisingRegistry:
    name = "raising-registry"

    @hookimpl
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        raise RuntimeError("render modes unavailable")


def test_a_duplicate_render_mode_key_names_both_plugins() -> None:
    pm = create_plugin_manager(load_entrypoints=False, plugins=[DigestA(), DigestB()])

    with pytest.raises(PluginError) as caught:
        Hooks(pm).render_modes()

    assert "render mode 'digest'" in str(caught.value)
    assert "'digest-a'" in str(caught.value) and "'digest-b'" in str(caught.value)
    [conflict] = find_conflicts(pm)
    assert (conflict.what, conflict.key, set(conflict.plugins)) == (
        "render mode", "digest", {"digest-a", "digest-b"})


async def test_a_duplicate_storage_scheme_names_both_plugins_when_a_store_opens() -> None:
    with pytest.raises(PluginError) as caught:
        async with open_store("memory://", plugins=[MemoryClone()], load_entrypoints=False):
            pass  # pragma: no cover - never opened

    message = str(caught.value)
    assert "storage scheme 'memory'" in message
    assert "'stm_plugins.memory_storage'" in message and "'memory-clone'" in message


def test_a_provider_claimed_by_two_tool_formats_is_a_conflict() -> None:
    pm = create_plugin_manager(load_entrypoints=False, plugins=[OpenAIClaimer()])

    with pytest.raises(PluginError, match="tool format provider 'openai'"):
        Hooks(pm).tool_format_for("openai")
    assert [(c.what, c.key, c.plugins) for c in find_conflicts(pm)] == [
        ("tool format provider", "openai", ("stm_plugins.tool_formats", "openai-claimer"))]


def test_describe_reports_conflicts_on_both_plugins_without_raising() -> None:
    pm = create_plugin_manager(load_entrypoints=False, plugins=[DigestA(), DigestB()])

    infos = {i.name: i for i in describe_plugins(pm)}

    for name in ("digest-a", "digest-b"):
        assert infos[name].status == "loaded"
        assert infos[name].error == ("render mode 'digest' is registered by more than one "
                                     "plugin: 'digest-a' and 'digest-b'")
        assert infos[name].provides == ("render mode digest",)
    assert infos["stm_plugins.render_modes"].error is None


def test_describe_reports_a_registration_hook_that_raises() -> None:
    pm = create_plugin_manager(load_entrypoints=False, plugins=[RaisingRegistry()])

    [info] = [i for i in describe_plugins(pm) if i.name == "raising-registry"]

    assert info.status == "loaded"
    assert info.error == ("stm_register_render_modes raised RuntimeError: "
                          "render modes unavailable")


def test_describe_lists_loaded_failed_and_blocked_plugins(fake_site: FakeSite) -> None:
    fake_site.module("acme_gate", GATE_PLUGIN)
    fake_site.module("acme_render", RENDER_PLUGIN)
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.distribution("stm-acme", "2.0", {"acme_gate": "acme_gate",
                                               "acme_render": "acme_render"})
    fake_site.distribution("stm-broken", "0.1", {"broken": "broken_mod"})
    fake_site.distribution("stm-other", "0.1", {"other": "does_not_matter"})
    pm = create_plugin_manager(block=["stm-other"], plugins=[DigestA()])

    infos = describe_plugins(pm)

    kinds = [i.kind for i in infos if i.status == "loaded"]
    assert kinds == sorted(kinds, key=["builtin", "entrypoint", "host"].index)
    by_name = {i.name: i for i in infos}
    gate = by_name["acme_gate"]
    assert (gate.kind, gate.distribution, gate.version, gate.entry_point, gate.hooks) == (
        "entrypoint", "stm-acme", "2.0", "acme_gate", ("stm_tool_available",))
    assert by_name["acme_render"].provides == ("render mode digest",)
    broken = by_name["broken"]
    assert (broken.status, broken.hooks) == ("failed", ())
    assert broken.error == "import: RuntimeError: acme credentials missing"
    assert (by_name["other"].status, by_name["other"].error) == (
        "blocked", "disabled by block=")
    assert by_name["digest-a"].kind == "host"
    assert by_name["stm_plugins.memory_storage"].distribution == "stm-core"
    assert [i.status for i in infos][-2:] == ["failed", "blocked"]


def test_stm_plugins_lists_a_broken_plugin_and_exits_0(fake_site: FakeSite) -> None:
    fake_site.module("acme_gate", GATE_PLUGIN)
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.distribution("stm-acme", "2.0", {"acme_gate": "acme_gate"})
    fake_site.distribution("stm-broken", "0.1", {"broken": "broken_mod"})

    result = CliRunner().invoke(plugins_command, ["--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    statuses = {p["name"]: p["status"] for p in report["plugins"]}
    assert statuses["acme_gate"] == "loaded" and statuses["broken"] == "failed"
    assert report["conflicts"] == []


def test_stm_plugins_table_shows_failures_and_conflicts(fake_site: FakeSite) -> None:
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.module("render_one", RENDER_PLUGIN)
    fake_site.module("render_two", RENDER_PLUGIN)
    fake_site.distribution("stm-broken", "0.1", {"broken": "broken_mod"})
    fake_site.distribution("stm-digests", "0.1", {"one": "render_one", "two": "render_two"})

    result = CliRunner().invoke(plugins_command, [], env={"COLUMNS": "200"})

    assert result.exit_code == 0, result.output
    assert "RuntimeError: acme credentials missing" in result.output
    assert ("conflict: render mode 'digest' is registered by more than one plugin: "
            "'one' and 'two'") in result.output


def test_stm_plugins_honours_the_groups_json_flag(fake_site: FakeSite) -> None:
    result = CliRunner().invoke(plugins_command, [], obj=CliState(json_output=True))

    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["plugins"][0]["kind"] == "builtin"


def test_stm_plugins_in_strict_mode_fails_with_one_clear_line(fake_site: FakeSite) -> None:
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.distribution("stm-broken", "0.1", {"broken": "broken_mod"})

    result = CliRunner().invoke(plugins_command, [], env={"STM_STRICT_PLUGINS": "1"})

    assert result.exit_code == 1
    assert "'broken' (entry point broken_mod of stm-broken 0.1) failed to import" in result.output
    assert "Traceback" not in result.output
