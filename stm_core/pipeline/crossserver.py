"""Stage 3, cross-server fold (reference §7.1, DESIGN decision 7).

In a server, a user who opted in also recalls their own user-scope rows from
*other* servers. Rows that come from a DM are never folded into a server.
"""

from __future__ import annotations

from stm_core.models import Turn
from stm_core.pipeline.load import Loaded
from stm_core.storage.records import DM_SERVER, MemoryRecord


def folded_rows(turn: Turn, loaded: Loaded) -> list[MemoryRecord]:
    """The rows folded in, newest first (guild turns with opt-in only)."""
    current = turn.server_id
    if current is None or not loaded.opt_in:
        return []
    channel = turn.channel_id
    lineage = turn.persona_lineage_id
    return [r for r in loaded.user.memories.newest_first()
            if r.key.server_id != current and r.key.server_id != DM_SERVER
            and r.key.channel_id != channel
            and (not lineage or r.persona_lineage_id == lineage)]
