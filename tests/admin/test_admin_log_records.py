"""The ``stm.admin`` INFO records docs/logging.md promises: which settings
changed, categories replaced and memories cleared, a memory edited or cleared.
Ids are logged; texts never are."""

from __future__ import annotations

import logging

import pytest

from stm_core.storage.records import MemoryKey
from stm_core.store import Stm
from tests.conftest import OpenStm


def admin_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "stm.admin"]


async def test_a_settings_change_logs_the_server_and_the_settings_it_changed(
        open_stm: OpenStm, caplog: pytest.LogCaptureFixture) -> None:
    async with open_stm("memory://") as stm:
        with caplog.at_level(logging.INFO, logger="stm.admin"):
            await stm.admin.set_server_params("g1", refresh_cadence=3, cache_policy="stable")
            await stm.admin.set_stm_enabled("g1", enabled=False)
    assert admin_records(caplog) == ["server g1 settings changed: cache_policy, refresh_cadence",
                                     "server g1 settings changed: stm_enabled"]


async def test_replacing_categories_logs_how_many_and_the_memories_cleared(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    await stm.admin.edit_memory(channel_id="c1", server_id="g1", summary="a secret")
    await stm.admin.edit_memory(channel_id="c2", server_id="g1", summary="another")
    with caplog.at_level(logging.INFO, logger="stm.admin"):
        await stm.admin.set_categories("g1", ["Goals: g", "Mood: m", "Plans: p"])
        await stm.admin.reset_categories("g1")
    assert admin_records(caplog) == [
        "server g1 categories replaced (3); 2 server memories cleared",
        "server g1 categories replaced (0); 0 server memories cleared"]


async def test_an_edit_logs_the_row_and_whether_it_was_written_or_cleared(
        open_stm: OpenStm, caplog: pytest.LogCaptureFixture) -> None:
    key = MemoryKey.server("g1", "c1", "p1")
    async with open_stm("memory://") as stm:
        with caplog.at_level(logging.INFO, logger="stm.admin"):
            await stm.admin.edit_memory(channel_id="c1", server_id="g1", persona_id="p1",
                                        summary="a secret")
            await stm.admin.edit_memory(channel_id="c1", server_id="g1", persona_id="p1",
                                        summary=" ")
    assert admin_records(caplog) == [f"memory of {key} edited (written)",
                                     f"memory of {key} edited (cleared)"]
    assert "a secret" not in caplog.text
