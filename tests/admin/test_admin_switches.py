"""The capability switch, private channels, the privacy bypass and a user's
cross-server opt-in."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from stm_core.errors import ValidationError
from stm_core.store import Stm

SERVER = "g1"


async def test_capability_defaults_on_and_toggles(stm: Stm) -> None:
    shown = await stm.admin.capability(SERVER)
    assert shown.stm_enabled and shown.is_default
    await stm.engine.server_settings(SERVER)
    off = await stm.admin.set_stm_enabled(SERVER, enabled=False)
    assert not off.stm_enabled and not off.is_default
    assert (await stm.adapter.load_server_settings(SERVER)).stm_enabled is False
    assert not (await stm.engine.profile_for(SERVER)).stm_enabled, "cache refreshed"
    on = await stm.admin.set_stm_enabled(SERVER, enabled=True)
    assert on.stm_enabled and (await stm.engine.profile_for(SERVER)).stm_enabled


async def test_private_channels_set_add_remove(stm: Stm) -> None:
    assert (await stm.admin.privacy(SERVER)).private_channel_ids == ()
    shown = await stm.admin.set_private_channels(SERVER, channel_ids=["c2", "c1"])
    assert shown.private_channel_ids == ("c1", "c2")
    shown = await stm.admin.add_private_channels(SERVER, channel_ids=["c3", "c1"])
    assert shown.private_channel_ids == ("c1", "c2", "c3")
    shown = await stm.admin.remove_private_channels(SERVER, channel_ids=["c2", "missing"])
    assert shown.private_channel_ids == ("c1", "c3")
    stored = await stm.adapter.load_server_settings(SERVER)
    assert stored.private_channel_ids == {"c1", "c3"}
    assert (await stm.engine.profile_for(SERVER)).private_channel_ids == {"c1", "c3"}
    assert (await stm.admin.set_private_channels(SERVER, channel_ids=[])).private_channel_ids == ()


@pytest.mark.parametrize("ids", [[""], ["ok", "has space"], ["x" * 129], "c1"])
async def test_bad_channel_ids_write_nothing(stm: Stm, ids: Any) -> None:
    await stm.admin.set_private_channels(SERVER, channel_ids=["keep"])
    with pytest.raises(ValidationError) as info:
        await stm.admin.add_private_channels(SERVER, channel_ids=ids)
    assert info.value.field == "channel_ids"
    assert (await stm.admin.privacy(SERVER)).private_channel_ids == ("keep",)


async def test_adding_and_removing_private_channels_logs_which_setting_changed(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="stm.admin"):
        await stm.admin.add_private_channels(SERVER, channel_ids=["c1"])
        await stm.admin.remove_private_channels(SERVER, channel_ids=["c1"])
    assert [r.getMessage() for r in caplog.records if r.name == "stm.admin"] == \
        [f"server {SERVER} settings changed: private_channel_ids"] * 2


async def test_privacy_bypass(stm: Stm) -> None:
    shown = await stm.admin.set_privacy_bypass(SERVER, bypass=True)
    assert shown.privacy_bypass
    assert (await stm.engine.profile_for(SERVER)).privacy_bypass
    assert not (await stm.admin.set_privacy_bypass(SERVER, bypass=False)).privacy_bypass
    with pytest.raises(ValidationError):
        await stm.admin.set_privacy_bypass(SERVER, bypass="yes")  # type: ignore[arg-type]


async def test_user_opt_in(stm: Stm) -> None:
    shown = await stm.admin.user_opt_in("u1")
    assert shown.user_id == "u1" and not shown.crossserver_opt_in
    view = await stm.engine.user_view("u1")
    assert not view.prefs.crossserver_opt_in
    assert (await stm.admin.set_user_opt_in("u1", opt_in=True)).crossserver_opt_in
    assert (await stm.adapter.load_user_prefs("u1")).crossserver_opt_in
    assert (await stm.engine.user_view("u1")).prefs.crossserver_opt_in, "cache refreshed"
    assert not (await stm.admin.set_user_opt_in("u1", opt_in=False)).crossserver_opt_in
    with pytest.raises(ValidationError):
        await stm.admin.set_user_opt_in("", opt_in=True)


async def test_an_id_of_128_printable_characters_is_kept_a_longer_or_unprintable_one_refused(
        stm: Stm) -> None:
    longest = "x" * 128
    shown = await stm.admin.set_private_channels(SERVER, channel_ids=[longest, "é1"])
    assert shown.private_channel_ids == (longest, "é1")
    for bad in ("x" * 129, "tab\there", "nul\x00", "zero\u200bwidth", "a\u00a0b"):
        with pytest.raises(ValidationError) as refused:
            await stm.admin.add_private_channels(SERVER, channel_ids=[bad])
        assert refused.value.field == "channel_ids"
    assert (await stm.admin.privacy(SERVER)).private_channel_ids == (longest, "é1")
