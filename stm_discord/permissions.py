"""The Discord permission policy, as an ``stm_admin_permission`` plugin.

The kit states Discord's Manage Server permission as ``Actor.can_manage``
(the member's permissions in the channel the command ran in). stm's built-in
policy already asks for it on every change of a server's settings or shared
memory; Discord's command surface (reference §11) also puts the *reading* of
a server's settings behind it: every ``/server …`` and ``/capabilities …``
command needs Manage Server, while ``/persona stm view`` stays open to all.

A host replaces the policy as any other: a plugin of its own that answers
first (``tryfirst``), or a store opened without this module.
This module does not import discord.
"""

from __future__ import annotations

from hookspecs import hookimpl
from hookspecs.types import Actor, AdminAction

#: Admin reads behind ``/server …`` and ``/capabilities …``.
SETTINGS_READS = frozenset({"server_params", "prompts", "categories", "capability", "privacy"})


@hookimpl
def stm_admin_permission(actor: Actor, action: AdminAction) -> bool | None:
    if action.scope == "server" and action.name in SETTINGS_READS:
        return actor.can_manage
    return None
