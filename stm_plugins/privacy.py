"""The built-in visibility policy: private channels and cross-server recall.

* In a server, an entry of the same server is hidden when its channel, or the
  parent of its thread, is private, unless the server's bypass is on or the
  current channel (or its parent) is itself private (isolation is one way).
* An entry from another server appears only with the user's opt-in, and never
  from that server's private channels or their threads, whatever its bypass
  (DESIGN decision 8).
* A DM's memory never appears in a server (decision 7).
"""

from __future__ import annotations

from collections.abc import Iterable

from hookspecs import hookimpl
from hookspecs.types import VisibilityContext, VisibilityPolicy, hides_channels
from stm_core.storage.records import DM_SERVER, MemoryRecord


def _in_private(entry: MemoryRecord, private: frozenset[str]) -> bool:
    return entry.key.channel_id in private or (
        entry.parent_channel_id is not None and entry.parent_channel_id in private)


def _hidden_channels(ctx: VisibilityContext) -> frozenset[str]:
    """The channels whose entries (and their threads') the policy hides in
    the turn's own server: the private ones, unless the bypass is on or the
    turn is itself in a private channel."""
    current = ctx.current
    if ctx.turn.server_id is None or current is None or current.privacy_bypass \
            or ctx.current_is_private:
        return frozenset()
    return current.private_channel_ids


@hides_channels(_hidden_channels)
def private_channels(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
    turn = ctx.turn
    origin = entry.key.server_id
    if turn.server_id is not None and origin == turn.server_id:
        current = ctx.current
        if current is None or current.privacy_bypass or ctx.current_is_private:
            return None
        private = current.private_channel_ids
        # Most servers mark no channel private: nothing to look up for each row.
        return False if private and _in_private(entry, private) else None
    if origin == DM_SERVER:
        # DM-origin memories stay in DMs.
        return None if turn.server_id is None else False
    # Another server's memory, folded in by the user's opt-in.
    if not ctx.crossserver_opt_in:
        return False
    origin_settings = ctx.servers.get(origin)
    if origin_settings is not None and _in_private(entry, origin_settings.private_channel_ids):
        return False
    return None


@hookimpl
def stm_visibility_policies() -> Iterable[VisibilityPolicy]:
    return [private_channels]
