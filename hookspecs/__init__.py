"""The plugin contract of stm: one module per concern, one spec class each.

Every hook is prefixed ``stm_``, synchronous and cheap. Hooks that register
things return records (see :mod:`stm_core.plugin_types`); anything async lives in
methods of those records. stm calls most hooks once per plugin set and memoizes
the answers, so implementations must be pure functions of their arguments.
"""

from __future__ import annotations

import pluggy

PROJECT_NAME = "stm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

from hookspecs.annotations import AnnotationSpecs  # noqa: E402
from hookspecs.gates import ToolGateSpecs  # noqa: E402
from hookspecs.macros import MacroSpecs  # noqa: E402
from hookspecs.mentions import MentionSpecs  # noqa: E402
from hookspecs.phrasing import PhrasingSpecs  # noqa: E402
from hookspecs.render import RenderSpecs  # noqa: E402
from hookspecs.storage import StorageSpecs  # noqa: E402
from hookspecs.toolschema import ToolSchemaSpecs  # noqa: E402
from hookspecs.visibility import VisibilitySpecs  # noqa: E402

#: Every spec class, in the order they are added to a plugin manager.
SPEC_CLASSES: tuple[type, ...] = (
    StorageSpecs,
    ToolGateSpecs,
    PhrasingSpecs,
    RenderSpecs,
    MacroSpecs,
    MentionSpecs,
    VisibilitySpecs,
    ToolSchemaSpecs,
    AnnotationSpecs,
)

__all__ = ["PROJECT_NAME", "SPEC_CLASSES", "hookimpl", "hookspec"]
