"""The installed distribution: its entry points load as any host's would."""

import json
import os
import subprocess
import sys
from pathlib import Path

from stm_core import open_store


async def test_an_installed_host_uses_every_vintage_plugin(make_turn):
    async with open_store("vintage://") as stm:  # installed plugins load by default
        await stm.admin.set_server_params("3001", render_mode="vintage_ledger")
        assert await stm.tool_available(make_turn(provider="anthropic/claude-2")) is False
        routed = make_turn(channel_id="2002", provider="anthropic/claude-3-5-sonnet")
        schema = await stm.tool_schema(routed, "anthropic")
        assert schema["description"] == "Vintage notes (kept since 0.1)"
        offered = await stm.tool_schema(routed)  # the host's turn: no format named
        assert offered is not None and "Vintage notes (kept since 0.1)" in json.dumps(offered)
        assert (await stm.apply_tool_call(routed, {"summary": "cake at 5"})).ok
        context = await stm.build_context(make_turn(channel_id="2001"))
        assert any("LEDGER: cake at 5]" in item.text for item in context.memory_items)


def stm_plugins(**env):
    environ = {**os.environ, **env}
    stm = Path(sys.executable).parent / "stm"  # the command installed with stm
    result = subprocess.run([stm, "plugins", "--json"],
                            capture_output=True, text=True, env=environ, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def vintage_entries(report):
    return {p["name"]: p for p in report["plugins"] if p["name"].startswith("vintage_")}


def test_stm_plugins_lists_the_bundle_loaded():
    entries = vintage_entries(stm_plugins())
    assert set(entries) == {"vintage_gates", "vintage_phrasing", "vintage_render",
                            "vintage_storage"}
    assert {p["status"] for p in entries.values()} == {"loaded"}


def test_disabling_the_distribution_by_name():
    entries = vintage_entries(stm_plugins(STM_DISABLED_PLUGINS="stm-vintage"))
    assert len(entries) == 4
    assert {p["status"] for p in entries.values()} == {"blocked"}


async def test_a_disabled_gate_no_longer_vetoes(make_turn, monkeypatch):
    monkeypatch.setenv("STM_DISABLED_PLUGINS", "vintage_gates")
    async with open_store("vintage://") as stm:
        assert await stm.tool_available(make_turn(provider="anthropic/claude-2")) is True
