"""What a refused admin call tells its caller: a ValidationError names the
field and what is allowed, a PermissionDenied names the user, the action and
where, a missing storage capability names itself (docs/admin.md)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import pytest
from stm_core.plugin_types import Actor, StorageAdapterSpec

from hookspecs import hookimpl
from stm_core.admin import Admin
from stm_core.admin.params import PARAM_NAMES
from stm_core.errors import PermissionDenied, StorageError, ValidationError
from stm_core.storage.protocol import StorageInventory
from stm_plugins.memory_storage import MemoryAdapter
from tests.conftest import OpenStm

MEMBER = Actor(user_id="member", can_manage=False)
LONG = "x" * 4001
BAD_ID = "has space"
ID_RULE = "a non-empty id of at most 128 characters without spaces"

Call = Callable[[Admin], Coroutine[Any, Any, Any]]


async def import_with(admin: Admin, section: str, name: str, value: object) -> Any:
    doc = await admin.export_config("g1")
    doc[section][name] = value
    return await admin.import_config("g1", doc)


#: A value refused by the method itself: (call, message, field, allowed).
VALUE_REFUSALS: dict[str, tuple[Call, str, str, str]] = {
    "a too long nudge": (
        lambda a: a.set_prompts("g1", nudge=LONG),
        "nudge: 4001 characters; at most 4000", "nudge", "at most 4000 characters"),
    "a too long tool description": (
        lambda a: a.set_prompts("g1", tool_description=LONG),
        "tool_description: 4001 characters; at most 4000", "tool_description",
        "at most 4000 characters"),
    "an imported too long nudge": (
        lambda a: import_with(a, "prompts", "nudge", LONG),
        "prompts.nudge: 4001 characters; at most 4000", "prompts.nudge",
        "at most 4000 characters"),
    "an imported bad private channel id": (
        lambda a: import_with(a, "privacy", "private_channel_ids", [BAD_ID]),
        f"privacy.private_channel_ids: {BAD_ID!r} is not a valid id; expected {ID_RULE}",
        "privacy.private_channel_ids", ID_RULE),
    "an actor that is not an Actor": (
        lambda a: a.set_server_params("g1", refresh_cadence=3, actor="member"),  # type: ignore[arg-type]
        "actor must be an Actor, got str", "actor",
        "stm_core.Actor(user_id=..., can_manage=...)"),
    "a DM memory without its user": (
        lambda a: a.view_memory(channel_id="dm"),
        "a direct-message memory needs the user id", "user_id", "the DM user's id"),
    **{f"a bad {field} of a memory": (
        lambda a, field=field: a.view_memory(**{"channel_id": "c1", "user_id": "u1",
                                                field: BAD_ID}),
        f"{field}: {BAD_ID!r} is not a valid id; expected {ID_RULE}", field, ID_RULE)
       for field in ("channel_id", "persona_id", "server_id", "user_id")},
    "a bad private channel": (
        lambda a: a.set_private_channels("g1", channel_ids=["c1", BAD_ID]),
        f"channel_ids: {BAD_ID!r} is not a valid id; expected {ID_RULE}", "channel_ids",
        ID_RULE),
    "an unknown cache policy": (
        lambda a: a.set_server_params("g1", cache_policy="never"),
        "cache_policy must be one of freshness, stable, got 'never'", "cache_policy",
        "freshness, stable"),
    "a depth out of range": (
        lambda a: a.set_server_params("g1", nudge_injection_depth=21),
        "nudge_injection_depth must be an integer from 0 to 20, got 21",
        "nudge_injection_depth", "an integer from 0 to 20"),
}


@pytest.mark.parametrize("case", sorted(VALUE_REFUSALS))
async def test_a_refused_value_names_its_field_and_what_is_allowed(
        open_stm: OpenStm, case: str) -> None:
    call, message, field, allowed = VALUE_REFUSALS[case]
    async with open_stm("memory://") as stm:
        before = await stm.adapter.load_server_settings("g1")
        with pytest.raises(ValidationError) as refused:
            await call(stm.admin)
        assert (str(refused.value), refused.value.field, refused.value.allowed) == \
            (message, field, allowed)
        assert await stm.adapter.load_server_settings("g1") == before


#: Every call naming one server, user or channel: (the id's field, the call).
IdCall = Callable[[Admin, str], Coroutine[Any, Any, Any]]
ID_CALLS: dict[str, tuple[str, IdCall]] = {
    "server_params": ("server_id", lambda a, i: a.server_params(i)),
    "set_server_params": ("server_id", lambda a, i: a.set_server_params(i, refresh_cadence=3)),
    "reset_server_params": ("server_id", lambda a, i: a.reset_server_params(i)),
    "prompts": ("server_id", lambda a, i: a.prompts(i)),
    "set_prompts": ("server_id", lambda a, i: a.set_prompts(i, nudge="n")),
    "reset_prompts": ("server_id", lambda a, i: a.reset_prompts(i)),
    "categories": ("server_id", lambda a, i: a.categories(i)),
    "set_categories": ("server_id", lambda a, i: a.set_categories(i, ["Goals: g"])),
    "reset_categories": ("server_id", lambda a, i: a.reset_categories(i)),
    "capability": ("server_id", lambda a, i: a.capability(i)),
    "set_stm_enabled": ("server_id", lambda a, i: a.set_stm_enabled(i, enabled=False)),
    "privacy": ("server_id", lambda a, i: a.privacy(i)),
    "set_private_channels": ("server_id",
                             lambda a, i: a.set_private_channels(i, channel_ids=["c1"])),
    "add_private_channels": ("server_id",
                             lambda a, i: a.add_private_channels(i, channel_ids=["c1"])),
    "remove_private_channels": ("server_id",
                                lambda a, i: a.remove_private_channels(i, channel_ids=["c1"])),
    "set_privacy_bypass": ("server_id", lambda a, i: a.set_privacy_bypass(i, bypass=True)),
    "export_config": ("server_id", lambda a, i: a.export_config(i)),
    "import_config": ("server_id", lambda a, i: a.import_config(
        i, {"format": "stm-server-config", "version": 1})),
    "list_personas": ("server_id", lambda a, i: a.list_personas(server_id=i)),
    "user_opt_in": ("user_id", lambda a, i: a.user_opt_in(i)),
    "set_user_opt_in": ("user_id", lambda a, i: a.set_user_opt_in(i, opt_in=True)),
    "clear_user": ("user_id", lambda a, i: a.clear_user(i)),
    "clear_channel": ("channel_id", lambda a, i: a.clear_channel(i)),
    "channel_rows": ("channel_id", lambda a, i: a.channel_rows(i)),
}


@pytest.mark.parametrize("name", sorted(ID_CALLS))
async def test_a_bad_id_is_refused_naming_the_argument_and_the_id_rule(
        open_stm: OpenStm, name: str) -> None:
    field, call = ID_CALLS[name]
    async with open_stm("memory://") as stm:
        with pytest.raises(ValidationError) as refused:
            await call(stm.admin, BAD_ID)
        assert await stm.admin.list_servers() == ()
    assert (str(refused.value), refused.value.field, refused.value.allowed) == \
        (f"{field}: {BAD_ID!r} is not a valid id; expected {ID_RULE}", field, ID_RULE)


#: An edit_memory refused on a server with the categories Goals and HP/MP:
#: (arguments, message, field, allowed).
EDIT_REFUSALS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "a summary in category mode": (
        {"summary": "text"},
        "this server is in category mode; give categories (one of: Goals, HP/MP)",
        "categories", "goals, hp_mp"),
    "categories and a summary in category mode": (
        {"summary": "text", "categories": {"Goals": "g"}},
        "this server is in category mode; give categories (one of: Goals, HP/MP)",
        "categories", "goals, hp_mp"),
    "an unknown category": (
        {"categories": {"Mood": "calm"}},
        "unknown category 'Mood'; this server's categories: Goals (goals), HP/MP (hp_mp)",
        "categories", "Goals (goals), HP/MP (hp_mp)"),
    "a category given twice": (
        {"categories": {"Goals": "a", "goals": "b"}},
        "category 'Goals' is given twice", "categories", "each category once"),
    "categories in summary mode": (
        {"server_id": "g2", "categories": {"summary": "x"}},
        "this server is in summary mode; give a summary", "summary", "text (blank clears)"),
    "nothing in summary mode": (
        {"server_id": "g2"},
        "this server is in summary mode; give a summary", "summary", "text (blank clears)"),
}


@pytest.mark.parametrize("case", sorted(EDIT_REFUSALS))
async def test_a_refused_edit_names_its_field_and_what_is_allowed(
        open_stm: OpenStm, case: str) -> None:
    arguments, message, field, allowed = EDIT_REFUSALS[case]
    async with open_stm("memory://") as stm:
        await stm.admin.set_categories("g1", ["Goals: g", "HP/MP: h"])
        with pytest.raises(ValidationError) as refused:
            await stm.admin.edit_memory(**{"server_id": "g1", "channel_id": "c1", **arguments})
        assert await stm.adapter.count_memories() == 0
    assert (str(refused.value), refused.value.field, refused.value.allowed) == \
        (message, field, allowed)


async def test_resetting_an_unknown_parameter_names_it_and_the_known_ones(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(ValidationError) as refused:
            await stm.admin.reset_server_params("g1", names=["refresh_cadence", "cadence"])
        known = ", ".join(PARAM_NAMES)
        assert str(refused.value) == f"unknown server parameter 'cadence'; allowed: {known}"
        assert refused.value.field == "names"
        assert refused.value.allowed == known
        assert not (await stm.adapter.load_server_settings("g1")).refresh_cadence


async def test_listing_every_channel_without_a_server_names_the_server_id(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(ValidationError) as refused:
            await stm.admin.list_personas(user_id="u1")
    assert str(refused.value) == "listing every channel needs the server id"
    assert refused.value.field == "server_id"
    assert refused.value.allowed == "a server id"


async def test_listing_a_dm_channel_without_its_user_names_the_user_id(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(ValidationError) as refused:
            await stm.admin.list_personas(channel_id="dm")
    assert str(refused.value) == "listing a direct-message channel needs the user id"
    assert refused.value.field == "user_id"
    assert refused.value.allowed == "the DM user's id"


class NoInventory:
    """The memory adapter without ``StorageInventory`` (an older plugin's)."""

    name = "no-inventory"

    def __init__(self) -> None:
        self._inner = MemoryAdapter()

    def __getattr__(self, name: str) -> Any:
        if name in {"server_ids", "count_older_than"}:
            raise AttributeError(name)
        return getattr(self._inner, name)


class NoInventoryPlugin:
    @hookimpl
    def stm_register_storage_adapters(self) -> Iterable[StorageAdapterSpec]:
        return [StorageAdapterSpec(name="no-inventory", schemes=("no-inventory",),
                                   factory=lambda url, settings: NoInventory())]


async def test_listing_servers_without_the_inventory_capability_names_the_adapter(
        open_stm: OpenStm) -> None:
    async with open_stm("no-inventory://", plugins=[NoInventoryPlugin()]) as stm:
        assert not isinstance(stm.adapter, StorageInventory)
        with pytest.raises(StorageError) as refused:
            await stm.admin.list_servers()
    assert str(refused.value) == ("the no-inventory storage adapter cannot list servers "
                                  "(it does not implement StorageInventory)")


async def test_a_refused_server_change_names_the_user_the_action_and_the_server(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(PermissionDenied) as refused:
            await stm.admin.set_server_params("g1", refresh_cadence=3, actor=MEMBER)
    assert str(refused.value) == ("user member may not set server params in server g1: "
                                  "changing it needs the manage permission (viewing is open)")


async def test_a_refused_channel_clear_names_the_channel(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(PermissionDenied) as refused:
            await stm.admin.clear_channel("c1", actor=MEMBER)
    assert str(refused.value) == ("user member may not clear channel in channel c1: "
                                  "changing it needs the manage permission (viewing is open)")


async def test_a_refused_look_at_another_users_data_names_both_users(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        with pytest.raises(PermissionDenied) as refused:
            await stm.admin.user_opt_in("owner", actor=MEMBER)
    assert str(refused.value) == ("user member may not user opt in: it concerns user owner's "
                                  "own memory, which only they may see or change")
