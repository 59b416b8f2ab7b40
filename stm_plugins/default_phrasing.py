"""The default nudge and tool description (``trylast``: any plugin answering
first wins; a server's override beats both)."""

from __future__ import annotations

from hookspecs import hookimpl

SUMMARY_NUDGE = (
    "[System: After responding, use {short_term_memory_tool} to create or update your "
    "short-term memory for this conversation. Do not use {short_term_memory_tool} when the "
    "user explicitly asks you to remember, save or store something for future "
    "conversations; {memory_tool} or {memory_update_tool} is for that.]"
)
CATEGORY_NUDGE = (
    "[System: After responding, use {short_term_memory_tool} to create or update your "
    "short-term memory fields: {category_labels}. Do not use {short_term_memory_tool} when "
    "the user explicitly asks you to remember, save or store something for future "
    "conversations; {memory_tool} or {memory_update_tool} is for that.]"
)
TOOL_DESCRIPTION = (
    "Update your short-term working memory for the current story or conversation. Use it "
    "for context you will need later in this conversation but not permanently. Do not use "
    "it when a user explicitly asks you to remember, save or store something for the "
    "future; use the long-term memory tools for that."
)


@hookimpl(trylast=True)
def stm_nudge_template(mode: str) -> str | None:
    return CATEGORY_NUDGE if mode == "category" else SUMMARY_NUDGE


@hookimpl(trylast=True)
def stm_tool_description(mode: str) -> str | None:
    return TOOL_DESCRIPTION
