"""stm: short-term memory for LLM chat bots.

The public API for host apps::

    from stm_core import open_store, Turn
    from stm_core.inject import inject

See ``docs/host-guide.md``. Names are imported on first use (PEP 562), so
``import stm_core`` and the ``stm`` command load only what they touch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.lazy_names import lazy_names

if TYPE_CHECKING:
    from hookspecs import hookimpl
    from stm_core import inject
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
    from stm_core.name_maps import IdSet, NameMap
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

#: Where each public name lives. ``inject`` is the subpackage itself (callable
#: for a deprecation period); its function is ``stm_core.inject.inject``.
_HOME: dict[str, str] = {
    "DIALOGUE_HISTORY": "stm_core.models",
    "DIALOGUE_SAMPLE": "stm_core.models",
    "STM_TAG": "stm_core.models",
    "ContextItem": "stm_core.models",
    "HistoryMessage": "stm_core.models",
    "PersonaResponse": "stm_core.models",
    "RecordResult": "stm_core.models",
    "StmContext": "stm_core.models",
    "ToolResult": "stm_core.models",
    "Turn": "stm_core.models",
    "NameMap": "stm_core.name_maps",
    "IdSet": "stm_core.name_maps",
    "TOOL_NAME": "stm_core.tool",
    "Actor": "stm_core.plugin_types",
    "AdminAction": "stm_core.plugin_types",
    "OtherChannelParts": "stm_core.plugin_types",
    "RenderMode": "stm_core.plugin_types",
    "StorageAdapterSpec": "stm_core.plugin_types",
    "ToolFormat": "stm_core.plugin_types",
    "ToolSchema": "stm_core.plugin_types",
    "VisibilityContext": "stm_core.plugin_types",
    "Clock": "stm_core.clock",
    "ManualClock": "stm_core.clock",
    "SystemClock": "stm_core.clock",
    "ConfigurationError": "stm_core.errors",
    "PermissionDenied": "stm_core.errors",
    "PluginError": "stm_core.errors",
    "StmError": "stm_core.errors",
    "StorageError": "stm_core.errors",
    "StoreClosed": "stm_core.errors",
    "TemplateError": "stm_core.errors",
    "UnknownDatabaseURL": "stm_core.errors",
    "UnknownProvider": "stm_core.errors",
    "ValidationError": "stm_core.errors",
    "Settings": "stm_core.settings",
    "Stm": "stm_core.store",
    "open_store": "stm_core.store",
    "inject": "stm_core.inject",
    "StmMessage": "stm_core.inject",
    "find_injected": "stm_core.inject",
    "insert_at_dialogue_depth": "stm_core.inject",
    "strip_injected": "stm_core.inject",
    "SyncStm": "stm_core.sync",
    "open_store_sync": "stm_core.sync",
    "adapter_for_url": "stm_core.storage.factory",
    "create_plugin_manager": "stm_core.plugins",
    "detect_long_term_intent": "stm_core.intent",
    "hookimpl": "hookspecs",
}

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

__getattr__, __dir__ = lazy_names(globals(), _HOME, __all__)

