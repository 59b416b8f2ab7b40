"""NovelAI has no tool calls: no STM tool and no nudge on its turns."""

from __future__ import annotations

from hookspecs import hookimpl

PROVIDER = "novelai"


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    return False if provider.lower() == PROVIDER else None
