"""The plugin contract of stm: one module per concern, one spec class each.

Every hook is prefixed ``stm_``, synchronous and cheap. Hooks that register
things return records (see :mod:`hookspecs.types`); anything async lives in
methods of those records. stm calls most hooks once per plugin set and memoizes
the answers, so implementations must be pure functions of their arguments.
"""

from __future__ import annotations

from hookspecs.annotations import AnnotationSpecs
from hookspecs.budget import BudgetSpecs
from hookspecs.gates import ToolGateSpecs
from hookspecs.macros import MacroSpecs
from hookspecs.markers import PROJECT_NAME, hookimpl, hookspec
from hookspecs.mentions import MentionSpecs
from hookspecs.permissions import PermissionSpecs
from hookspecs.phrasing import PhrasingSpecs
from hookspecs.render import RenderSpecs
from hookspecs.storage import StorageSpecs
from hookspecs.toolschema import ToolSchemaSpecs
from hookspecs.visibility import VisibilitySpecs

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
    PermissionSpecs,
    BudgetSpecs,
)

__all__ = ["PROJECT_NAME", "SPEC_CLASSES", "hookimpl", "hookspec"]
