"""Stage 1, load: everything one turn reads, through the store's cached loaders.

A warm turn answers every read here from the cache (no storage call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from stm_core.engine.cache import MemoryView, UserView
from stm_core.engine.profile import ServerProfile
from stm_core.models import Turn

if TYPE_CHECKING:
    from stm_core.engine.core import Engine


@attrs.define(kw_only=True)
class Loaded:
    """The state one turn works on (built on every turn: not a frozen class,
    whose every field costs a call to set)."""

    now_ms: int
    #: The current server's effective configuration (defaults in a DM).
    profile: ServerProfile
    #: The triggering user's state: cross-server opt-in and user-scope rows.
    user: UserView
    #: The current server's server-scope rows; ``None`` in a DM.
    server: MemoryView | None
    #: The user's cross-server opt-in (``user.prefs``), read by several
    #: stages: a field, not a property that reads three objects each time.
    opt_in: bool


def warm_load(engine: Engine, turn: Turn, user_id: str) -> Loaded | None:
    """What the turn reads, when the cache holds all of it (no coroutine),
    else ``None``."""
    now = engine.clock.now_ms()
    warm = engine.warm_turn_state(turn.server_id, user_id, now)
    if warm is None:
        return None
    profile, user, server = warm
    return Loaded(now_ms=now, profile=profile, user=user, server=server,
                  opt_in=user.prefs.crossserver_opt_in)


async def load(engine: Engine, turn: Turn, user_id: str) -> Loaded:
    loaded = warm_load(engine, turn, user_id)
    if loaded is not None:
        return loaded
    server_id = turn.server_id
    profile = await engine.profile_for(server_id)
    user = await engine.user_view(user_id)
    server = await engine.server_memories(server_id) if server_id is not None else None
    return Loaded(now_ms=engine.clock.now_ms(), profile=profile, user=user, server=server,
                  opt_in=user.prefs.crossserver_opt_in)
