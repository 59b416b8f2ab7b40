"""Prompt overrides: the tool description and the unified nudge of a server.

Overrides are stored as typed (trimmed) and expanded and sanitised when a
context is built, not here. Blank text means "use the default" (NULL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.admin.values import Mode, PromptText, ServerPrompts
from stm_core.errors import ValidationError
from stm_core.settings import MAX_PROMPT_OVERRIDE_LENGTH
from stm_core.storage.records import ServerSettings

if TYPE_CHECKING:
    from stm_core.plugins.hooks import Hooks

#: Provider whose phrasing the admin views show as "the default".
DEFAULT_PROVIDER = ""

#: Admin-facing names -> stored columns.
PROMPT_COLUMNS = {
    "tool_description": "tool_description_override",
    "nudge": "update_nudge_override",
}


def clean_override(text: str, *, field: str) -> str | None:
    """The value to store: ``None`` for blank text, else the trimmed text.

    Raises :class:`ValidationError` when longer than 4000 characters. Braces
    of any shape are kept: rendering replaces only ``{name}`` placeholders
    (:mod:`stm_core.text.templates`), so ``{0.__class__}`` stays literal text.
    """
    trimmed = text.strip()
    if not trimmed:
        return None
    if len(trimmed) > MAX_PROMPT_OVERRIDE_LENGTH:
        raise ValidationError(
            f"{field}: {len(trimmed)} characters; at most {MAX_PROMPT_OVERRIDE_LENGTH}",
            field=field, allowed=f"at most {MAX_PROMPT_OVERRIDE_LENGTH} characters")
    return trimmed


def server_prompts(stored: ServerSettings, mode: Mode, hooks: Hooks) -> ServerPrompts:
    """The override, or the default for the server's mode (category mode shows
    the default with ``{category_labels}`` still in it)."""
    description = stored.tool_description_override
    nudge = stored.update_nudge_override
    return ServerPrompts(
        server_id=stored.server_id,
        mode=mode,
        tool_description=PromptText(
            text=description or hooks.tool_description(DEFAULT_PROVIDER, mode),
            is_default=not description),
        nudge=PromptText(
            text=nudge or hooks.nudge_template(DEFAULT_PROVIDER, mode),
            is_default=not nudge),
    )
