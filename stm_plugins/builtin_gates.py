"""The gates every turn passes: tool support, the capability switch and
explicit long-term intent (the user wants a long-term action, so the STM tool
and its nudge stand back)."""

from __future__ import annotations

from hookspecs import hookimpl


@hookimpl
def stm_tool_available(has_tools: bool, stm_enabled: bool,
                       explicit_long_term_intent: bool) -> bool | None:
    if not has_tools or not stm_enabled or explicit_long_term_intent:
        return False
    return None
