"""stm: short-term memory for LLM chat bots.

The public API for host apps::

    from stm_core import open_store, Turn
    from stm_core.inject import inject

See ``docs/host-guide.md``. The package's layers, top to bottom (checked by
the import contracts in ``pyproject.toml``; docs/concepts.md draws them):

* the facade: :mod:`~stm_core.store`, :mod:`~stm_core.sync`, :mod:`~stm_core.cli`
  (and :mod:`~stm_core.testing`, the kit for adapter authors);
* what the facade calls: :mod:`~stm_core.admin`, :mod:`~stm_core.tool`,
  :mod:`~stm_core.pipeline`;
* :mod:`~stm_core.engine`: the cache and every read and write through it;
* :mod:`~stm_core.plugins`: loading plugins, the typed hook facade, the
  storage adapter factory;
* :mod:`~stm_core.storage`: the storage contract adapters implement;
* values: :mod:`~stm_core.models`, :mod:`~stm_core.settings`,
  :mod:`~stm_core.errors`, :mod:`~stm_core.name_maps`,
  :mod:`~stm_core.mention_names`, :mod:`~stm_core.inject`, and the text
  helpers of :mod:`~stm_core.text`;
* :mod:`stm_core._util`: private helpers with no stm imports of their own.

Old import paths of moved modules keep working for a deprecation period
(:mod:`stm_core._util.moved_paths`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stm_core._util import moved_paths

moved_paths.serve_old_paths()

# The public names, imported plainly, once the finder is in place (it makes
# `stm_core.inject` callable).
from hookspecs import hookimpl
from hookspecs.types import (
    Actor,
    AdminAction,
    OtherChannelParts,
    RenderMode,
    StorageAdapterSpec,
    ToolFormat,
    ToolSchema,
    VisibilityContext,
)
from stm_core import inject
from stm_core._util.clock import Clock, ManualClock, SystemClock
from stm_core.errors import (
    ConfigurationError,
    PermissionDenied,
    PluginError,
    StmError,
    StorageError,
    StoreClosed,
    TemplateError,
    UnknownDatabaseURL,
    UnknownProvider,
    ValidationError,
)
from stm_core.inject import (
    StmMessage,
    find_injected,
    insert_at_dialogue_depth,
    strip_injected,
)
from stm_core.models import (
    DIALOGUE_HISTORY,
    DIALOGUE_SAMPLE,
    STM_TAG,
    ContextItem,
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    StmContext,
    ToolResult,
    Turn,
)
from stm_core.name_maps import IdSet, NameMap
from stm_core.settings import Settings
from stm_core.text.intent import detect_long_term_intent
from stm_core.tool import TOOL_NAME

__all__ = [
    "DIALOGUE_HISTORY",
    "DIALOGUE_SAMPLE",
    "STM_TAG",
    "TOOL_NAME",
    "Actor",
    "AdminAction",
    "Clock",
    "ConfigurationError",
    "ContextItem",
    "HistoryMessage",
    "IdSet",
    "ManualClock",
    "NameMap",
    "OtherChannelParts",
    "PermissionDenied",
    "PersonaResponse",
    "PluginError",
    "RecordResult",
    "RenderMode",
    "Settings",
    "Stm",
    "StmContext",
    "StmError",
    "StmMessage",
    "StorageAdapterSpec",
    "StorageError",
    "StoreClosed",
    "SyncStm",
    "SystemClock",
    "TemplateError",
    "ToolFormat",
    "ToolResult",
    "ToolSchema",
    "Turn",
    "UnknownDatabaseURL",
    "UnknownProvider",
    "ValidationError",
    "VisibilityContext",
    "adapter_for_url",
    "create_plugin_manager",
    "detect_long_term_intent",
    "find_injected",
    "hookimpl",
    "inject",
    "insert_at_dialogue_depth",
    "open_store",
    "open_store_sync",
    "strip_injected",
]

if TYPE_CHECKING:
    from stm_core.plugins import create_plugin_manager
    from stm_core.plugins.storage import adapter_for_url
    from stm_core.store import Stm, open_store
    from stm_core.sync import SyncStm, open_store_sync


def __getattr__(name: str) -> Any:
    """The facade's names, imported when first read. The ``stm`` command lives
    in this package, so whatever it imports runs first: ``stm --help`` opens no
    store and must not pay for one (docs/cli.md, "Start-up")."""
    if name in ("Stm", "open_store"):
        from stm_core import store as home
    elif name in ("SyncStm", "open_store_sync"):
        from stm_core import sync as home  # type: ignore[no-redef]
    elif name == "adapter_for_url":
        from stm_core.plugins import storage as home  # type: ignore[no-redef]
    elif name == "create_plugin_manager":
        import stm_core.plugins as home  # type: ignore[no-redef]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(home, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
