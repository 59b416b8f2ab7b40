"""The ``update_short_term_memory`` tool: availability, schema, application."""

TOOL_NAME = "update_short_term_memory"
