"""The admin API: ``stm.admin`` (an :class:`Admin`) and the values it returns.

See ``docs/admin.md``. Only :class:`Admin` and the server parameters load
with the package; the other values, summary history, privacy requests and the
configuration-file format load on first use (PEP 562 here, and in
:mod:`stm_core.admin.api` when a method first needs them): a quick command
needs none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.admin.api import Admin
from stm_core.admin.params import PARAM_NAMES, ServerParams, param_label
from stm_core.lazy_names import lazy_names

if TYPE_CHECKING:
    from stm_core.admin.config_io import FORMAT_NAME, FORMAT_VERSION
    from stm_core.admin.history import MemoryHistoryView, MemoryRestore, RevisionInfo
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

#: Where each name that loads on first use lives.
_HOME = {
    "FORMAT_NAME": "stm_core.admin.config_io",
    "FORMAT_VERSION": "stm_core.admin.config_io",
    "MemoryHistoryView": "stm_core.admin.history",
    "MemoryRestore": "stm_core.admin.history",
    "RevisionInfo": "stm_core.admin.history",
    "ForgetResult": "stm_core.admin.user_data",
    "Capability": "stm_core.admin.values",
    "CategoryInfo": "stm_core.admin.values",
    "ClearResult": "stm_core.admin.values",
    "MemoryEdit": "stm_core.admin.values",
    "MemorySection": "stm_core.admin.values",
    "MemorySnapshot": "stm_core.admin.values",
    "PersonaMemory": "stm_core.admin.values",
    "PrivacySettings": "stm_core.admin.values",
    "PromptText": "stm_core.admin.values",
    "ServerCategories": "stm_core.admin.values",
    "ServerPrompts": "stm_core.admin.values",
    "UserOptIn": "stm_core.admin.values",
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
