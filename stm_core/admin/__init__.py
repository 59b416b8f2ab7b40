"""The admin API: ``stm.admin`` (an :class:`Admin`) and the values it returns.

See ``docs/admin.md``. This layer holds what an operator or a host app asks of
one server: its settings, categories, prompts, memories, history and privacy
requests. It sits above the engine (every read and write goes through it) and
beside :mod:`stm_core.tool` and :mod:`stm_core.pipeline`; only the facade
(:mod:`stm_core.store`, :mod:`stm_core.sync`, :mod:`stm_core.cli`) imports it.
"""

from __future__ import annotations

from stm_core.admin.api import Admin
from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
from stm_core.admin.history import MemoryHistoryView, MemoryRestore, RevisionInfo
from stm_core.admin.params import PARAM_NAMES, ServerParams, param_label
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
