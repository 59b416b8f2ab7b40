"""The host's long-term-memory tools in the default texts (DESIGN decision 15).

stm's own tool is ``update_short_term_memory``; the tools that keep something
for good belong to the host. Their names come from the settings
(``long_term_memory_tool``, ``long_term_memory_update_tool``) or from a plugin
answering the ``memory_tool`` / ``memory_update_tool`` macros. The default nudge
and tool description carry one placeholder each for the sentence that names
them; with no such tool configured the sentence is left out, so the model is
never told to call a tool it does not have.
"""

from __future__ import annotations

from collections.abc import Mapping

from stm_core.settings import Settings

#: Placeholders of the default texts, filled by :func:`long_term_macros`.
NUDGE_SENTENCE = "long_term_memory_sentence"
DESCRIPTION_SENTENCE = "long_term_memory_hint"
TOOL_MACROS = ("memory_tool", "memory_update_tool")


def long_term_macros(plugin_macros: Mapping[str, str], env: Settings) -> dict[str, str]:
    """``plugin_macros`` with the tool names of the settings (they win) and
    the two sentences, empty when no long-term tool is configured."""
    values = dict(plugin_macros)
    for name, tool in zip(TOOL_MACROS, (env.long_term_memory_tool,
                                        env.long_term_memory_update_tool), strict=True):
        if tool:
            values[name] = f"`{tool}`"
    tools = " or ".join(values[name] for name in TOOL_MACROS if values.get(name))
    stm_tool = values.get("short_term_memory_tool", "`update_short_term_memory`")
    if tools:
        values[NUDGE_SENTENCE] = (
            f" Do not use {stm_tool} when the user explicitly asks you to remember, save or "
            f"store something for future conversations; {tools} is for that.")
        values[DESCRIPTION_SENTENCE] = (
            " Do not use it when a user explicitly asks you to remember, save or store "
            f"something for the future; use {tools} for that.")
    else:
        values[NUDGE_SENTENCE] = values[DESCRIPTION_SENTENCE] = ""
    return values
