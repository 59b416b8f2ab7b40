"""The errors stm raises. Every message says what was wrong and what is allowed."""

from __future__ import annotations


class StmError(Exception):
    """Base class of every error stm raises on purpose."""


class ValidationError(StmError, ValueError):
    """A person or a model sent a value stm does not accept.

    ``field`` names the input; ``allowed`` says what would have been accepted.
    """

    def __init__(self, message: str, *, field: str | None = None,
                 allowed: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.allowed = allowed


class TemplateError(ValidationError):
    """Kept for code that catches it; stm itself no longer raises it.

    Prompt texts are stored as typed and rendered safely (see
    :mod:`stm_core.text.templates`), so no brace is refused any more.
    """


class ConfigurationError(StmError):
    """Settings or environment variables that cannot work together."""


class UnknownDatabaseURL(ConfigurationError):
    """No registered storage adapter claims the URL's scheme."""


class PluginError(StmError):
    """A plugin failed to load or two plugins claim the same key."""


class PluginWarning(UserWarning):
    """A plugin loaded, but part of it will never run (e.g. an unmarked ``stm_...`` function)."""


class UnattributedLineWarning(UserWarning):
    """A user line was stored without an author id: erasure and export cannot
    find it (``STM_REQUIRE_AUTHOR_IDS`` makes it an error)."""


class StorageError(StmError):
    """The database failed a write; nothing was cached from it."""


class PermissionDenied(StmError):
    """The acting user may not perform this admin action."""


class UnknownProvider(ValidationError):
    """No tool format is known for a turn's provider (and model): a typo, or a
    provider that needs an explicit ``format=`` or an ``stm_tool_format`` plugin."""


class StoreClosed(StmError):
    """A call reached a store that was already closed."""
