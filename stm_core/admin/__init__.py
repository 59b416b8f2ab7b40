"""The admin API: ``stm.admin`` (an :class:`Admin`) and the values it returns.

See ``docs/admin.md``.
"""

from __future__ import annotations

from stm_core.admin.api import Admin
from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
from stm_core.admin.history import MemoryHistoryView, MemoryRestore, RevisionInfo
from stm_core.admin.params import PARAM_NAMES, param_label
from stm_core.admin.user_data import ForgetResult
from stm_core.admin.values import (
    Capability,
    CategoryInfo,
    ClearResult,
    MemoryEdit,
    MemorySection,
    MemorySnapshot,
    PersonaMemory,
    PrivacySettings,
    PromptText,
    ServerCategories,
    ServerParams,
    ServerPrompts,
    UserOptIn,
)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "PARAM_NAMES",
    "Admin",
    "Capability",
    "CategoryInfo",
    "ClearResult",
    "ForgetResult",
    "MemoryEdit",
    "MemoryHistoryView",
    "MemoryRestore",
    "MemorySection",
    "MemorySnapshot",
    "PersonaMemory",
    "PrivacySettings",
    "PromptText",
    "RevisionInfo",
    "ServerCategories",
    "ServerParams",
    "ServerPrompts",
    "UserOptIn",
    "param_label",
]
