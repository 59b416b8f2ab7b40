"""Stage 5, visibility: the registered policies may hide any candidate.

The built-in policy (``stm_plugins.privacy``) enforces private channels with
thread inheritance and the bypass, keeps DM rows out of servers and other
servers' private channels out of folded recall. Policies see the settings of
every server a candidate comes from; those are loaded through the store's
cache, so a warm turn makes no storage call. Runs before the cap, one
candidate at a time as the walk over the newest rows reaches it: the walk
calls them directly with one context per build (no closure per row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from hookspecs.types import VisibilityContext
from stm_core._util.fast_attrs import unchecked_maker
from stm_core.engine.profile import ServerProfile
from stm_core.models import Turn
from stm_core.storage.records import DM_SERVER, MemoryRecord, ServerSettings

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

#: ``VisibilityContext(...)``: one per build (see stm_core._util.fast_attrs).
_make_context = unchecked_maker(VisibilityContext)


def current_is_private(turn: Turn, profile: ServerProfile) -> bool:
    """The current channel, or the channel a thread hangs under, is private."""
    if turn.server_id is None:
        return False
    private = profile.private_channel_ids
    parent = turn.parent_channel_id
    return turn.channel_id in private or (parent is not None and parent in private)


def cached_origin_settings(turn: Turn, profile: ServerProfile,
                           candidates: Sequence[MemoryRecord]) -> dict[str, ServerSettings] | None:
    """The current server's settings by its id (none in a DM), and those of
    every server a candidate comes from, when no read is needed: every
    candidate comes from a DM or the current server. Else ``None``."""
    server_id, settings = turn.server_id, profile.settings
    servers = {server_id: settings} if server_id is not None and settings is not None else {}
    for r in candidates:
        if _to_load(r.key.server_id, servers):
            return None
    return servers


async def origin_settings(engine: Engine, turn: Turn, profile: ServerProfile,
                          candidates: list[MemoryRecord]) -> dict[str, ServerSettings]:
    """Settings of the current server and of every server a candidate comes from."""
    servers = cached_origin_settings(turn, profile, ())
    assert servers is not None  # no candidate: nothing to read
    for r in candidates:
        origin = r.key.server_id
        if _to_load(origin, servers):
            servers[origin] = await engine.server_settings(origin)
    return servers


def _to_load(origin: str, servers: Mapping[str, ServerSettings]) -> bool:
    """Policies need the settings of ``origin``, not among ``servers`` yet."""
    return origin != DM_SERVER and origin not in servers


def visibility_context(turn: Turn, profile: ServerProfile, opt_in: bool,
                       servers: Mapping[str, ServerSettings]) -> VisibilityContext:
    """What every policy sees of this turn, made once per build."""
    return _make_context(
        turn=turn,
        current=servers.get(turn.server_id) if turn.server_id is not None else None,
        current_is_private=current_is_private(turn, profile),
        crossserver_opt_in=opt_in,
        servers=servers,
    )
