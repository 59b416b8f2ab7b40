"""What each admin call asks the permission policy (docs/plugins/hooks.md).

A host's policy decides on ``AdminAction(name, writes, scope, server_id,
channel_id, user_id)``: the method's name, whether it changes anything, and
whose data it touches. A policy keyed on those fields (e.g. "moderators may
run clear_channel", "anyone may do what does not write") is only as good as
the action each call describes, so every call's action is pinned here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
from stm_core.plugin_types import Actor, AdminAction

from hookspecs import hookimpl
from stm_core.admin import Admin
from stm_core.store import Stm
from tests.conftest import OpenStm

ACTOR = Actor(user_id="u1", can_manage=True)
G, C, U = "g1", "c1", "u1"

Call = Callable[[Admin], Coroutine[Any, Any, Any]]


def action(name: str, writes: bool, scope: str, *, server_id: str | None = None,
           channel_id: str | None = None, user_id: str | None = None) -> AdminAction:
    return AdminAction(name=name, writes=writes, scope=scope, server_id=server_id,
                       channel_id=channel_id, user_id=user_id)


def server(name: str, writes: bool) -> AdminAction:
    return action(name, writes, "server", server_id=G)


CONFIG = {"format": "stm-server-config", "version": 1}

#: call -> the one action it must ask about.
CASES: dict[str, tuple[Call, AdminAction]] = {
    "server_params": (lambda a: a.server_params(G, actor=ACTOR),
                      server("server_params", False)),
    "set_server_params": (lambda a: a.set_server_params(G, refresh_cadence=3, actor=ACTOR),
                          server("set_server_params", True)),
    "reset_server_params": (lambda a: a.reset_server_params(G, actor=ACTOR),
                            server("reset_server_params", True)),
    "prompts": (lambda a: a.prompts(G, actor=ACTOR), server("prompts", False)),
    "set_prompts": (lambda a: a.set_prompts(G, nudge="Refresh.", actor=ACTOR),
                    server("set_prompts", True)),
    "reset_prompts": (lambda a: a.reset_prompts(G, actor=ACTOR),
                      server("reset_prompts", True)),
    "categories": (lambda a: a.categories(G, actor=ACTOR), server("categories", False)),
    "set_categories": (lambda a: a.set_categories(G, ["Goals: g"], actor=ACTOR),
                       server("set_categories", True)),
    "reset_categories": (lambda a: a.reset_categories(G, actor=ACTOR),
                         server("reset_categories", True)),
    "capability": (lambda a: a.capability(G, actor=ACTOR), server("capability", False)),
    "set_stm_enabled": (lambda a: a.set_stm_enabled(G, enabled=False, actor=ACTOR),
                        server("set_stm_enabled", True)),
    "privacy": (lambda a: a.privacy(G, actor=ACTOR), server("privacy", False)),
    "set_private_channels": (lambda a: a.set_private_channels(G, channel_ids=["c9"],
                                                              actor=ACTOR),
                             server("set_private_channels", True)),
    "add_private_channels": (lambda a: a.add_private_channels(G, channel_ids=["c8"],
                                                              actor=ACTOR),
                             server("add_private_channels", True)),
    "remove_private_channels": (lambda a: a.remove_private_channels(G, channel_ids=["c8"],
                                                                    actor=ACTOR),
                                server("remove_private_channels", True)),
    "set_privacy_bypass": (lambda a: a.set_privacy_bypass(G, bypass=True, actor=ACTOR),
                           server("set_privacy_bypass", True)),
    "export_config": (lambda a: a.export_config(G, actor=ACTOR),
                      server("export_config", False)),
    "import_config": (lambda a: a.import_config(G, CONFIG, actor=ACTOR),
                      server("import_config", True)),
    "import_config dry run": (lambda a: a.import_config(G, CONFIG, dry_run=True, actor=ACTOR),
                              server("import_config", False)),
    "list_servers": (lambda a: a.list_servers(actor=ACTOR), action("list_servers", False,
                                                                   "server")),
    # A guild channel's memory is the server's.
    "view_memory": (lambda a: a.view_memory(channel_id=C, server_id=G, actor=ACTOR),
                    action("view_memory", False, "server", server_id=G, channel_id=C)),
    "list_personas": (lambda a: a.list_personas(channel_id=C, server_id=G, actor=ACTOR),
                      action("list_personas", False, "server", server_id=G, channel_id=C)),
    "edit_memory": (lambda a: a.edit_memory(channel_id=C, server_id=G, user_id=U,
                                            summary="edited", actor=ACTOR),
                    action("edit_memory", True, "server", server_id=G, channel_id=C,
                           user_id=U)),
    "memory_history": (lambda a: a.memory_history(channel_id=C, server_id=G, actor=ACTOR),
                       action("memory_history", False, "server", server_id=G, channel_id=C)),
    "undo_memory": (lambda a: a.undo_memory(channel_id=C, server_id=G, actor=ACTOR),
                    action("undo_memory", True, "server", server_id=G, channel_id=C)),
    "restore_memory": (lambda a: a.restore_memory(channel_id=C, server_id=G, rev=1,
                                                  actor=ACTOR),
                       action("restore_memory", True, "server", server_id=G, channel_id=C)),
    # A DM's memory is its user's.
    "view_memory in a DM": (lambda a: a.view_memory(channel_id="dm", user_id=U, actor=ACTOR),
                            action("view_memory", False, "user", channel_id="dm", user_id=U)),
    "list_personas in a DM": (lambda a: a.list_personas(channel_id="dm", user_id=U,
                                                        actor=ACTOR),
                              action("list_personas", False, "user", channel_id="dm",
                                     user_id=U)),
    "edit_memory in a DM": (lambda a: a.edit_memory(channel_id="dm", user_id=U, summary="m",
                                                    actor=ACTOR),
                            action("edit_memory", True, "user", channel_id="dm", user_id=U)),
    "memory_history in a DM": (lambda a: a.memory_history(channel_id="dm", user_id=U,
                                                          actor=ACTOR),
                               action("memory_history", False, "user", channel_id="dm",
                                      user_id=U)),
    "undo_memory in a DM": (lambda a: a.undo_memory(channel_id="dm", user_id=U, actor=ACTOR),
                            action("undo_memory", True, "user", channel_id="dm", user_id=U)),
    "restore_memory in a DM": (lambda a: a.restore_memory(channel_id="dm", user_id=U, rev=1,
                                                          actor=ACTOR),
                               action("restore_memory", True, "user", channel_id="dm",
                                      user_id=U)),
    "clear_channel": (lambda a: a.clear_channel(C, actor=ACTOR),
                      action("clear_channel", True, "channel", channel_id=C)),
    # The preview of clear_channel is asked about as clear_channel, not writing.
    "channel_rows": (lambda a: a.channel_rows(C, actor=ACTOR),
                     action("clear_channel", False, "channel", channel_id=C)),
    "user_opt_in": (lambda a: a.user_opt_in(U, actor=ACTOR),
                    action("user_opt_in", False, "user", user_id=U)),
    "set_user_opt_in": (lambda a: a.set_user_opt_in(U, opt_in=True, actor=ACTOR),
                        action("set_user_opt_in", True, "user", user_id=U)),
    "clear_user": (lambda a: a.clear_user(U, actor=ACTOR),
                   action("clear_user", True, "user", user_id=U)),
    "forget_user": (lambda a: a.forget_user(U, actor=ACTOR),
                    action("forget_user", True, "user", user_id=U)),
    "forget_user dry run": (lambda a: a.forget_user(U, dry_run=True, actor=ACTOR),
                            action("forget_user", False, "user", user_id=U)),
    "export_user": (lambda a: a.export_user(U, actor=ACTOR),
                    action("export_user", False, "user", user_id=U)),
}


class Recorder:
    """A policy that allows everything and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[Actor, AdminAction]] = []

    @hookimpl
    def stm_admin_permission(self, actor: Actor, action: AdminAction) -> bool | None:
        self.asked.append((actor, action))
        return True


@pytest.fixture
async def memory_stm(open_stm: OpenStm) -> AsyncIterator[Stm]:
    async with open_stm("memory://") as store:
        for channel, user in ((C, None), ("dm", U)):  # twice: a revision to undo to
            for text in ("first", "second"):
                await store.admin.edit_memory(channel_id=channel, server_id=None if user else G,
                                              user_id=user or U, summary=text)
        yield store


@pytest.mark.parametrize("case", sorted(CASES))
async def test_each_call_asks_the_policy_about_its_own_action(memory_stm: Stm,
                                                               case: str) -> None:
    recorder = Recorder()
    memory_stm.pm.register(recorder, name="recorder")
    call, expected = CASES[case]
    await call(memory_stm.admin)
    assert recorder.asked == [(ACTOR, expected)]

