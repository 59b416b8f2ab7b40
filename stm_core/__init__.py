"""stm: short-term memory for LLM chat bots.

The public API for host apps::

    from stm_core import open_store, Turn, inject

See ``docs/host-guide.md``.
"""

from __future__ import annotations

from hookspecs import hookimpl
from stm_core.clock import Clock, ManualClock, SystemClock
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
    inject,
    insert_at_dialogue_depth,
    strip_injected,
)
from stm_core.intent import detect_long_term_intent
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
from stm_core.plugin_types import (
    Actor,
    AdminAction,
    OtherChannelParts,
    RenderMode,
    StorageAdapterSpec,
    ToolFormat,
    ToolSchema,
    VisibilityContext,
)
from stm_core.plugins import create_plugin_manager
from stm_core.settings import Settings
from stm_core.storage.factory import adapter_for_url
from stm_core.store import Stm, open_store
from stm_core.sync import SyncStm, open_store_sync
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
    "ManualClock",
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
