"""Nudge and tool description for ``anthropic/...`` providers, with a macro."""

from stm_core import hookimpl
from stm_vintage import ANTHROPIC_PREFIX

NUDGE = {
    "summary": "[System: Vintage: refresh your notes with {short_term_memory_tool}.]",
    "category": "[System: Vintage: refresh {category_labels} with {short_term_memory_tool}.]",
}


@hookimpl
def stm_nudge_template(provider, mode):
    if not provider.startswith(ANTHROPIC_PREFIX):
        return None
    return NUDGE[mode]


@hookimpl
def stm_tool_description(provider, mode):
    return "Vintage notes {vintage_signature}" if provider.startswith(ANTHROPIC_PREFIX) else None


@hookimpl
def stm_prompt_macros(provider):
    if not provider.startswith(ANTHROPIC_PREFIX):
        return None
    return {"vintage_signature": "(kept since 0.1)"}
