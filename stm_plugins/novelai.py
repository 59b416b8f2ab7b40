"""NovelAI has no tool calls: no STM tool and no nudge on its turns, whatever
the key's model (``"novelai"``, ``"novelai/kayra"``)."""

from __future__ import annotations

from hookspecs import hookimpl
from stm_core.plugins.providers import provider_family

PROVIDER = "novelai"


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    return False if provider_family(provider) == PROVIDER else None
