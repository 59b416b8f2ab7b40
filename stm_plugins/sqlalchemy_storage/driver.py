"""The PostgreSQL driver, imported only where PostgreSQL is used: SQLite-only
installs need no asyncpg. Every path to PostgreSQL (a store opened by a host,
each ``stm`` command) imports it here, so a missing driver reads the same
everywhere."""

from __future__ import annotations

import importlib
from types import ModuleType

from stm_core.errors import ConfigurationError

#: The one line a missing driver gives.
MISSING_DRIVER = ("PostgreSQL needs the asyncpg driver, which is not installed: "
                  "pip install 'stm-core[postgres]'")


def require_asyncpg() -> ModuleType:
    """``asyncpg``, or :class:`~stm_core.errors.ConfigurationError` saying what to install."""
    try:
        return importlib.import_module("asyncpg")
    except ImportError as exc:
        raise ConfigurationError(MISSING_DRIVER) from exc
