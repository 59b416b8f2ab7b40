"""Who may edit: the host states who acts, a policy hook decides.

The built-in policy follows the original: in a server, viewing is open and
changing needs the manage permission; a user's own data (their opt-in, their
rows, a DM's memory) is theirs alone. A refusal is a ``PermissionDenied``
that names who, what and why, and nothing is written. Calls without an
actor (the host's own code, the operator's command) are not checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from stm_core.plugin_types import Actor, AdminAction

from hookspecs import hookimpl
from stm_core.admin import Admin
from stm_core.errors import PermissionDenied, PluginError
from stm_core.store import Stm

from .crash_ops import snapshot

MEMBER = Actor(user_id="member")
MANAGER = Actor(user_id="manager", can_manage=True)
SERVER = "g1"

Call = Callable[[Admin, Actor | None], Coroutine[Any, Any, Any]]

#: Every admin call that changes a server's settings or shared memory.
SERVER_WRITES: dict[str, Call] = {
    "set_server_params": lambda a, who: a.set_server_params(SERVER, refresh_cadence=3,
                                                            actor=who),
    "reset_server_params": lambda a, who: a.reset_server_params(SERVER, actor=who),
    "set_prompts": lambda a, who: a.set_prompts(SERVER, nudge="Refresh it.", actor=who),
    "reset_prompts": lambda a, who: a.reset_prompts(SERVER, actor=who),
    "set_categories": lambda a, who: a.set_categories(SERVER, ["Goals: g"], actor=who),
    "reset_categories": lambda a, who: a.reset_categories(SERVER, actor=who),
    "set_stm_enabled": lambda a, who: a.set_stm_enabled(SERVER, enabled=False, actor=who),
    "set_private_channels": lambda a, who: a.set_private_channels(
        SERVER, channel_ids=["c9"], actor=who),
    "add_private_channels": lambda a, who: a.add_private_channels(
        SERVER, channel_ids=["c8"], actor=who),
    "remove_private_channels": lambda a, who: a.remove_private_channels(
        SERVER, channel_ids=["c1"], actor=who),
    "set_privacy_bypass": lambda a, who: a.set_privacy_bypass(SERVER, bypass=True, actor=who),
    "edit_memory": lambda a, who: a.edit_memory(channel_id="c1", server_id=SERVER,
                                                user_id=who.user_id, summary="edited",
                                                actor=who),
    "undo_memory": lambda a, who: a.undo_memory(channel_id="c1", server_id=SERVER, actor=who),
    "restore_memory": lambda a, who: a.restore_memory(channel_id="c1", server_id=SERVER,
                                                      rev=1, actor=who),
    "clear_channel": lambda a, who: a.clear_channel("c1", actor=who),
    "import_config": lambda a, who: a.import_config(SERVER, {
        "format": "stm-server-config", "version": 1}, actor=who),
}

SERVER_VIEWS: dict[str, Call] = {
    "server_params": lambda a, who: a.server_params(SERVER, actor=who),
    "prompts": lambda a, who: a.prompts(SERVER, actor=who),
    "categories": lambda a, who: a.categories(SERVER, actor=who),
    "capability": lambda a, who: a.capability(SERVER, actor=who),
    "privacy": lambda a, who: a.privacy(SERVER, actor=who),
    "export_config": lambda a, who: a.export_config(SERVER, actor=who),
    "view_memory": lambda a, who: a.view_memory(channel_id="c1", server_id=SERVER, actor=who),
    "list_personas": lambda a, who: a.list_personas(channel_id="c1", server_id=SERVER,
                                                    actor=who),
    "memory_history": lambda a, who: a.memory_history(channel_id="c1", server_id=SERVER,
                                                      actor=who),
    "list_servers": lambda a, who: a.list_servers(actor=who),
    "channel_rows": lambda a, who: a.channel_rows("c1", actor=who),
}

#: A user's own data: only that user.
OWN_DATA: dict[str, Callable[[Admin, Actor, str], Coroutine[Any, Any, Any]]] = {
    "user_opt_in": lambda a, who, owner: a.user_opt_in(owner, actor=who),
    "set_user_opt_in": lambda a, who, owner: a.set_user_opt_in(owner, opt_in=True, actor=who),
    "clear_user": lambda a, who, owner: a.clear_user(owner, actor=who),
    "view_memory": lambda a, who, owner: a.view_memory(channel_id="dm", user_id=owner,
                                                       actor=who),
    "list_personas": lambda a, who, owner: a.list_personas(channel_id="dm", user_id=owner,
                                                           actor=who),
    "edit_memory": lambda a, who, owner: a.edit_memory(channel_id="dm", user_id=owner,
                                                       summary="mine", actor=who),
    "memory_history": lambda a, who, owner: a.memory_history(channel_id="dm", user_id=owner,
                                                             actor=who),
    "undo_memory": lambda a, who, owner: a.undo_memory(channel_id="dm", user_id=owner,
                                                       actor=who),
    "restore_memory": lambda a, who, owner: a.restore_memory(channel_id="dm", user_id=owner,
                                                             rev=1, actor=who),
    "forget_user": lambda a, who, owner: a.forget_user(owner, actor=who),
    "export_user": lambda a, who, owner: a.export_user(owner, actor=who),
}


async def seeded(stm: Stm) -> Stm:
    # Twice each, so there is a revision to undo to.
    for version in ("", ", revised"):
        await stm.admin.edit_memory(channel_id="c1", server_id=SERVER, user_id="manager",
                                    summary="shared memory" + version)
        await stm.admin.edit_memory(channel_id="dm", user_id="owner",
                                    summary="a DM memory" + version)
    return stm


def test_every_admin_call_takes_an_actor() -> None:
    public = [name for name, fn in inspect.getmembers(Admin, inspect.iscoroutinefunction)
              if not name.startswith("_")]
    missing = [n for n in public
               if inspect.signature(getattr(Admin, n)).parameters.get("actor") is None]
    assert public and missing == []
    assert set(SERVER_WRITES) | set(SERVER_VIEWS) | set(OWN_DATA) == set(public)


@pytest.mark.parametrize("name", sorted(SERVER_WRITES))
async def test_changing_a_server_needs_the_manage_permission(stm: Stm, name: str) -> None:
    await seeded(stm)
    before = await snapshot(stm)
    settings_before = await stm.adapter.load_server_settings(SERVER)
    with pytest.raises(PermissionDenied) as refused:
        await SERVER_WRITES[name](stm.admin, MEMBER)
    message = str(refused.value)
    assert "member" in message and "manage permission" in message
    assert await snapshot(stm) == before
    assert await stm.adapter.load_server_settings(SERVER) == settings_before
    await SERVER_WRITES[name](stm.admin, MANAGER)  # allowed


@pytest.mark.parametrize("name", sorted(SERVER_VIEWS))
async def test_viewing_a_server_is_open(stm: Stm, name: str) -> None:
    await seeded(stm)
    # A member without the manage permission sees what the host itself sees.
    assert await SERVER_VIEWS[name](stm.admin, MEMBER) == \
        await SERVER_VIEWS[name](stm.admin, None)


@pytest.mark.parametrize("name", sorted(OWN_DATA))
async def test_a_users_own_data_is_theirs_alone(stm: Stm, name: str) -> None:
    await seeded(stm)
    before = await snapshot(stm)
    for stranger in (MEMBER, MANAGER):  # managing a server grants nothing here
        with pytest.raises(PermissionDenied, match="only they may"):
            await OWN_DATA[name](stm.admin, stranger, "owner")
    assert await snapshot(stm) == before
    await OWN_DATA[name](stm.admin, Actor(user_id="owner"), "owner")


class DenyAll:
    """A policy that refuses every actor."""

    @hookimpl
    def stm_admin_permission(self, actor: Actor, action: AdminAction) -> bool | None:
        return False


async def test_calls_without_an_actor_are_not_checked(stm: Stm) -> None:
    stm.pm.register(DenyAll(), name="deny-all")
    with pytest.raises(PermissionDenied):
        await stm.admin.set_server_params(SERVER, refresh_cadence=5, actor=MANAGER)
    # The host's own calls (no actor) pass even this policy, and take effect.
    assert (await stm.admin.set_server_params(SERVER, refresh_cadence=4)).refresh_cadence == 4
    assert (await stm.adapter.load_server_settings(SERVER)).refresh_cadence == 4
    await stm.admin.set_user_opt_in("owner", opt_in=True)
    assert (await stm.admin.user_opt_in("owner")).crossserver_opt_in is True


class Owners:
    """A host's policy: bot owners may do anything; others as the default says."""

    @hookimpl
    def stm_admin_permission(self, actor: Actor, action: AdminAction) -> bool | None:
        return True if actor.user_id == "bot-owner" else None


async def test_a_host_policy_decides_before_the_default(stm: Stm) -> None:
    stm.pm.register(Owners(), name="owners")
    owner = Actor(user_id="bot-owner")
    assert (await stm.admin.set_server_params(SERVER, refresh_cadence=9,
                                              actor=owner)).refresh_cadence == 9
    with pytest.raises(PermissionDenied):
        await stm.admin.set_server_params(SERVER, refresh_cadence=8, actor=MEMBER)


class Broken:
    @hookimpl
    def stm_admin_permission(self) -> bool | None:
        raise RuntimeError("policy service down")


async def test_a_broken_policy_refuses(stm: Stm) -> None:
    stm.pm.register(Broken(), name="broken-policy")
    with pytest.raises(PluginError, match=r"broken-policy.*policy service down"):
        await stm.admin.set_server_params(SERVER, refresh_cadence=3, actor=MANAGER)
    assert (await stm.admin.server_params(SERVER)).refresh_cadence == 5


async def test_the_actor_must_be_an_actor(stm: Stm) -> None:
    from stm_core.errors import ValidationError

    with pytest.raises(ValidationError, match="Actor"):
        await stm.admin.server_params(SERVER, actor="manager")  # type: ignore[arg-type]
