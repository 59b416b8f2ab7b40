"""The admin API: ``stm.admin`` (an :class:`Admin`) and the values it returns.

See ``docs/admin.md``. The configuration-file format loads on first use: a
quick command needs none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.admin.api import Admin
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
from stm_core.lazy_names import lazy_names

if TYPE_CHECKING:
    from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION

_HOME = {
    "FORMAT_NAME": "stm_core.admin.config_io",
    "FORMAT_VERSION": "stm_core.admin.config_io",
}





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

__getattr__, __dir__ = lazy_names(globals(), _HOME, __all__)
