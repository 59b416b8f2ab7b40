"""May the tool be offered, and may the nudge fire?

Both follow the provider gates (any ``False`` wins): tool support, NovelAI,
the capability switch, explicit long-term intent, and third-party gates. The
tool is additionally withheld once it succeeded this turn; the nudge does not
look at that flag (reference §4.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.engine.profile import ServerProfile
from stm_core.models import Turn

if TYPE_CHECKING:
    from stm_core.engine.core import Engine


def gates_open(engine: Engine, turn: Turn, profile: ServerProfile) -> bool:
    """The provider gates for this turn (memoized per argument tuple)."""
    return engine.hooks.tool_available(turn.provider, turn.has_tools, profile.stm_enabled,
                                    turn.explicit_long_term_intent, turn.model)


async def tool_available(engine: Engine, turn: Turn) -> bool:
    profile = await engine.profile_for(turn.server_id)
    return gates_open(engine, turn, profile) and not engine.tool_already_used(turn)
