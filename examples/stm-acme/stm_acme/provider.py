"""Acme as a provider: which models may use the memory tool, and how to ask them.

``acme-lite`` has no tool calls, so neither the tool nor the nudge is offered
on its turns. Both Acme providers get a terser nudge and tool description.
"""

from __future__ import annotations

from stm_acme import ACME_LITE, PROVIDERS
from stm_core import hookimpl

NUDGE = {
    "summary": "[System: Acme note-keeping: after you reply, call {short_term_memory_tool} "
               "with a fresh summary of this conversation.]",
    "category": "[System: Acme note-keeping: after you reply, call {short_term_memory_tool} "
                "and refresh these fields: {category_labels}.]",
}
TOOL_DESCRIPTION = "Acme scratchpad: keep short notes about this conversation."


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    # Deny for acme-lite, abstain otherwise: other gates still decide.
    return False if provider == ACME_LITE else None


@hookimpl
def stm_nudge_template(provider: str, mode: str) -> str | None:
    return NUDGE.get(mode) if provider in PROVIDERS else None


@hookimpl
def stm_tool_description(provider: str) -> str | None:
    return TOOL_DESCRIPTION if provider in PROVIDERS else None
