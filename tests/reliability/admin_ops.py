"""Every admin mutator called by many tasks at once, and the check that the
final state equals some serial order of the acknowledged calls.

:func:`drive` runs in each process (``admin_worker``) or, for ``memory://``,
several times in one process. Each mutator works on a server (or users) of
its own, and every call is made distinct by its ``tag`` and number, so the
final state tells which calls it reflects:

* set adds and removes of private channels: every acknowledged id added is
  stored, every acknowledged id removed is gone (ids are distinct, so every
  serial order ends the same way);
* replacing writes (parameters, prompts, switches, categories, the channel
  list, opt-ins, one memory row): the final value is one acknowledged call's;
  partial updates of different columns never undo each other;
* ``import_config``: the stored configuration is exactly one acknowledged
  document, never a mix of two;
* memory edits and clears: each acknowledged row is stored, each cleared one
  gone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
from stm_core.admin.params import PARAM_NAMES
from stm_core.storage.records import MemoryFilter, MemoryKey
from stm_core.store import Stm

ADD, REMOVE, REPLACE = "p-add", "p-remove", "p-replace"
PARAMS, PROMPTS, SWITCHES, CATEGORIES, IMPORT, MEMORY = (
    "p-params", "p-prompts", "p-switches", "p-categories", "p-import", "p-memory")
OPT_IN_USER = "opt-user"


def seeded_ids(tags: list[str], n: int) -> list[str]:
    """Private channels stored before the race, each removed by one call."""
    return [f"r-{tag}-{i}" for tag in tags for i in range(n)]


def document(tag: str, i: int) -> dict[str, Any]:
    """Import number ``i`` of ``tag``: every field distinct from other imports'."""
    return {
        "format": FORMAT_NAME, "version": FORMAT_VERSION,
        # Every parameter, as an export shows it (unset ones as None).
        "params": {**dict.fromkeys(PARAM_NAMES), "refresh_cadence": 1 + i % 100,
                   "nudge_injection_depth": i % 20},
        "prompts": {"tool_description": None, "nudge": f"nudge {tag}-{i}"},
        "categories": [{"label": f"L {tag} {i}", "description": f"about {tag}-{i}"},
                       {"label": "Mood", "description": "how people feel"}],
        "stm_enabled": i % 2 == 0,
        "privacy": {"private_channel_ids": [f"i-{tag}-{i}"], "bypass": i % 3 == 0},
    }


async def seed(stm: Stm, tags: list[str], n: int) -> None:
    await stm.admin.add_private_channels(REMOVE, channel_ids=seeded_ids(tags, n))


async def drive(stm: Stm, tag: str, n: int) -> dict[str, Any]:
    """Every mutator ``n`` times at once; what each acknowledged call did."""
    admin = stm.admin
    acks: dict[str, list[Any]] = {}
    errors: list[str] = []

    async def call(kind: str, what: Any, op: Any) -> None:
        try:
            await op
        except Exception as exc:
            errors.append(f"{kind} {what}: {type(exc).__name__}: {exc}")
        else:
            acks.setdefault(kind, []).append(what)

    async def edit_then_clear(i: int) -> None:
        channel, user = f"m-{tag}-{i}", f"mu-{tag}-{i}"
        await call("edit_memory", [channel, user], admin.edit_memory(
            channel_id=channel, server_id=MEMORY, user_id=user, summary=f"s {tag}-{i}"))
        if i % 2:
            await call("clear_channel", channel, admin.clear_channel(channel))
        else:
            await call("clear_user", user, admin.clear_user(user))

    ops = []
    for i in range(n):
        me = f"{tag}-{i}"
        ops += [
            call("add", f"a-{me}", admin.add_private_channels(ADD, channel_ids=[f"a-{me}"])),
            call("remove", f"r-{me}", admin.remove_private_channels(
                REMOVE, channel_ids=[f"r-{me}"])),
            call("replace", [f"x-{me}", f"y-{me}"], admin.set_private_channels(
                REPLACE, channel_ids=[f"x-{me}", f"y-{me}"])),
            call("refresh_cadence", 1 + i % 100, admin.set_server_params(
                PARAMS, refresh_cadence=1 + i % 100)),
            call("nudge_injection_depth", i % 21, admin.set_server_params(
                PARAMS, nudge_injection_depth=i % 21)),
            call("content_injection_depth", None, admin.reset_server_params(
                PARAMS, names=["content_injection_depth"])),
            call("content_injection_depth", i % 20, admin.set_server_params(
                PARAMS, content_injection_depth=i % 20)),
            call("cache_policy", ("stable", "freshness")[i % 2], admin.set_server_params(
                PARAMS, cache_policy=("stable", "freshness")[i % 2])),
            call("prompt_budget_tokens", 100 + i, admin.set_server_params(
                PARAMS, prompt_budget_tokens=100 + i)),
            call("nudge", f"n {me}", admin.set_prompts(PROMPTS, nudge=f"n {me}")),
            call("tool_description", f"t {me}", admin.set_prompts(
                PROMPTS, tool_description=f"t {me}")),
            call("tool_description", None, admin.reset_prompts(PROMPTS, nudge=False)),
            call("stm_enabled", i % 2 == 0, admin.set_stm_enabled(SWITCHES,
                                                                   enabled=i % 2 == 0)),
            call("bypass", i % 2 == 1, admin.set_privacy_bypass(SWITCHES, bypass=i % 2 == 1)),
            call("categories", [f"C {me}"], admin.set_categories(CATEGORIES,
                                                                 [f"C {me}: about {me}"])),
            call("categories", [], admin.reset_categories(CATEGORIES)),
            call("opt_in", i % 2 == 0, admin.set_user_opt_in(OPT_IN_USER, opt_in=i % 2 == 0)),
            call("import", [tag, i], admin.import_config(IMPORT, document(tag, i))),
            call("shared_edit", f"shared {me}", admin.edit_memory(
                channel_id="shared", server_id=MEMORY, summary=f"shared {me}")),
            edit_then_clear(i),
        ]
    await asyncio.gather(*ops)
    return {"acks": acks, "errors": errors}


def merge(reports: list[dict[str, Any]]) -> tuple[dict[str, list[Any]], list[str]]:
    acks: dict[str, list[Any]] = {}
    errors: list[str] = []
    for report in reports:
        errors += report["errors"]
        for kind, values in report["acks"].items():
            acks.setdefault(kind, []).extend(values)
    return acks, errors


async def lost_updates(stm: Stm, acks: dict[str, list[Any]], tags: list[str],
                       n: int) -> list[str]:
    """What in the stored state no serial order of the acknowledged calls gives."""
    admin, adapter = stm.admin, stm.adapter
    problems: list[str] = []

    def expect(ok: bool, message: str) -> None:
        if not ok:
            problems.append(message)

    added = set((await admin.privacy(ADD)).private_channel_ids)
    expect(added == set(acks["add"]), f"{len(set(acks['add']) - added)} acknowledged "
           "private-channel adds lost")
    left = set((await admin.privacy(REMOVE)).private_channel_ids)
    expect(left == set(seeded_ids(tags, n)) - set(acks["remove"]),
           f"removes lost or undone: {sorted(left)[:5]}")
    replaced = sorted((await admin.privacy(REPLACE)).private_channel_ids)
    expect(replaced in acks["replace"], f"channel list {replaced} is no call's")

    params = await adapter.load_server_settings(PARAMS)
    for name in ("refresh_cadence", "nudge_injection_depth", "content_injection_depth",
                 "cache_policy", "prompt_budget_tokens"):
        expect(getattr(params, name) in acks[name], f"{name}={getattr(params, name)!r} "
               "is no call's")
    prompts = await adapter.load_server_settings(PROMPTS)
    expect(prompts.update_nudge_override in acks["nudge"], "nudge is no call's")
    expect(prompts.tool_description_override in acks["tool_description"],
           "tool description is no call's")
    switches = await adapter.load_server_settings(SWITCHES)
    expect(switches.stm_enabled in acks["stm_enabled"], "stm_enabled is no call's")
    expect(switches.privacy_bypass in acks["bypass"], "bypass is no call's")
    cats = [c.label for c in (await adapter.load_server_settings(CATEGORIES)).categories]
    expect(cats in acks["categories"], f"categories {cats} are no call's")
    prefs = await adapter.load_user_prefs(OPT_IN_USER)
    expect(prefs.crossserver_opt_in in acks["opt_in"], "opt-in is no call's")

    exported = await admin.export_config(IMPORT)
    exported.pop("server_id")
    expect(any(exported == document(t, i) for t, i in acks["import"]),
           f"the imported configuration is a mix of documents: {exported}")

    shared = await adapter.get_memory(MemoryKey.server(MEMORY, "shared", None))
    expect(shared is not None and shared.summary in acks["shared_edit"],
           "the shared memory row is no call's")
    for channel, user in acks["edit_memory"]:
        server_row = await adapter.get_memory(MemoryKey.server(MEMORY, channel, None))
        user_rows = await adapter.list_memories(MemoryFilter(user_id=user))
        if channel in acks["clear_channel"]:
            expect(server_row is None and user_rows == [], f"clear of {channel} undone")
        elif user in acks["clear_user"]:
            expect(server_row is not None and user_rows == [], f"clear of {user} undone")
        else:
            expect(False, f"{channel} was edited but neither clear was acknowledged")
    return problems
