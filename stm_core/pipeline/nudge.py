"""Stage 8b, the nudge (reference §4; only on turns with tools).

One nudge covers "create" and "refresh". It fires when the provider gates are
open (tool support, NovelAI, the capability switch, explicit long-term
intent, third-party gates) and the live row's counter has reached the
server's cadence. The counter is the database's, also after the row's content
expired; no row counts as 0. The text comes already expanded and sanitised
from the server's memoized prompt set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.engine.profile import ServerProfile
from stm_core.models import Turn
from stm_core.storage.records import MemoryRecord
from stm_core.tool.gate import gates_open

if TYPE_CHECKING:
    from stm_core.engine.core import Engine


def nudge_text(engine: Engine, turn: Turn, profile: ServerProfile,
               record: MemoryRecord | None) -> str | None:
    counter = record.turns_since_refresh if record is not None else 0
    if counter < profile.refresh_cadence or not gates_open(engine, turn, profile):
        return None
    prompts = engine.profiles.prompts(turn.server_id or "", profile, turn.provider, turn.model)
    return prompts.nudge or None
