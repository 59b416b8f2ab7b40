"""``stm plugins --json`` follows the JSON Schema in docs/plugins/, whatever
the mix of statuses, and the schema documents every status the code has."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hookspecs import hookimpl
from stm_core.cli.plugins import plugins as plugins_command
from stm_core.plugins import create_plugin_manager
from stm_core.plugins.introspect import PluginStatus, describe_plugins
from stm_core.plugins.records import PluginKind

from .conftest import FakeSite
from .sources import GATE_PLUGIN, RAISING_PLUGIN, RENDER_PLUGIN, UNKNOWN_HOOK_PLUGIN

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "plugins" / "plugins.schema.json"
UNMARKED = '''
def stm_tool_available(provider):
    return False
'''


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def report(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(plugins_command, ["--json", *args], env=env)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_every_status_kind_warning_and_conflict_validates(fake_site: FakeSite) -> None:
    fake_site.module("good_gate", GATE_PLUGIN)
    fake_site.module("render_one", RENDER_PLUGIN)
    fake_site.module("render_two", RENDER_PLUGIN)
    fake_site.module("broken_mod", RAISING_PLUGIN)
    fake_site.module("typo_mod", UNKNOWN_HOOK_PLUGIN)
    fake_site.module("unmarked_mod", UNMARKED)
    fake_site.distribution("stm-good", "1.0", {"gate": "good_gate"})
    fake_site.distribution("stm-digests", "0.1", {"one": "render_one", "two": "render_two"})
    fake_site.distribution("stm-broken", "0.1", {"broken": "broken_mod"})
    fake_site.distribution("stm-typo", "0.1", {"typo": "typo_mod"})
    fake_site.distribution("stm-unmarked", "0.1", {"unmarked": "unmarked_mod"})
    fake_site.distribution("stm-blocked", "0.1", {"blocked": "good_gate"})

    data = report(env={"STM_DISABLED_PLUGINS": "blocked"})

    jsonschema.validate(data, schema())
    statuses = {p["name"]: p["status"] for p in data["plugins"]}
    assert {statuses["gate"], statuses["broken"], statuses["blocked"]} == {
        "loaded", "failed", "blocked"}
    assert statuses["typo"] == "failed"
    assert [c["key"] for c in data["conflicts"]] == ["digest"]
    [unmarked] = [p for p in data["plugins"] if p["name"] == "unmarked"]
    assert unmarked["warnings"] and unmarked["hooks"] == []


def test_a_host_plugin_validates_too() -> None:
    class HostGate:
        name = "host-gate"

        @hookimpl
        def stm_tool_available(self, provider: str) -> None:
            return None

    pm = create_plugin_manager(load_entrypoints=False, plugins=[HostGate()])
    data = {"plugins": [i.to_dict() for i in describe_plugins(pm)], "conflicts": []}

    jsonschema.validate(data, schema())
    assert data["plugins"][-1]["kind"] == "host"


@pytest.mark.parametrize("field, literal", [("status", PluginStatus), ("kind", PluginKind)])
def test_the_schema_lists_exactly_the_values_the_code_has(field: str, literal: Any) -> None:
    documented = schema()["$defs"]["plugin"]["properties"][field]["enum"]

    assert sorted(documented) == sorted(typing.get_args(literal))


def test_an_undocumented_field_fails_validation(fake_site: FakeSite) -> None:
    data = report()
    data["plugins"][0]["surprise"] = 1

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema())
