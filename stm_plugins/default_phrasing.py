"""The default nudge and tool description (``trylast``: any plugin answering
first wins; a server's override beats both)."""

from __future__ import annotations

from hookspecs import hookimpl

# ``{long_term_memory_sentence}`` and ``{long_term_memory_hint}`` name the host's
# long-term-memory tools, and are empty when it has none (stm_core.text.long_term_tools).
SUMMARY_NUDGE = (
    "[System: After responding, use {short_term_memory_tool} to create or update your "
    "short-term memory for this conversation.{long_term_memory_sentence}]"
)
CATEGORY_NUDGE = (
    "[System: After responding, use {short_term_memory_tool} to create or update your "
    "short-term memory fields: {category_labels}.{long_term_memory_sentence}]"
)
TOOL_DESCRIPTION = (
    "Update your short-term working memory for the current story or conversation. Use it "
    "for context you will need later in this conversation but not permanently."
    "{long_term_memory_hint}"
)


@hookimpl(trylast=True)
def stm_nudge_template(mode: str) -> str | None:
    return CATEGORY_NUDGE if mode == "category" else SUMMARY_NUDGE


@hookimpl(trylast=True)
def stm_tool_description(mode: str) -> str | None:
    return TOOL_DESCRIPTION
