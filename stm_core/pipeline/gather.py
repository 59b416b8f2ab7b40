"""Stage 2, gather: the other-channel candidates of this turn (reference §2.1).

* In a server: its server-scope rows, except the current channel.
* In a DM: the user's user-scope rows, except the current channel, kept only
  when they come from a DM unless the user opted in to cross-server recall.

Both filter by persona lineage when the turn's lineage id is truthy; with no
lineage every persona's rows match (one channel may then appear once per
persona). Candidates come newest first, in the cached view's own order. The
server's own rows are not listed here: the walk (``sortcap.first_visible``)
applies this rule to each row it reaches, and the cap stops it (stage 6).
"""

from __future__ import annotations

from stm_core.models import Turn
from stm_core.pipeline.load import Loaded
from stm_core.storage.records import DM_SERVER, MemoryRecord


def dm_candidates(turn: Turn, loaded: Loaded) -> list[MemoryRecord]:
    channel = turn.channel_id
    lineage = turn.persona_lineage_id
    opt_in = loaded.opt_in
    return [r for r in loaded.user.memories.newest_first()
            if r.key.channel_id != channel
            and (not lineage or r.persona_lineage_id == lineage)
            and (opt_in or r.key.server_id == DM_SERVER)]
