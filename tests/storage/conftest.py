"""Fixtures shared by the storage tests (a module may define its own ``adapter``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stm_plugins.sqlalchemy_storage.sqlite_adapter import SqliteAdapter

from .helpers import sqlite_adapter


@pytest.fixture
async def adapter(tmp_path: Path) -> AsyncIterator[SqliteAdapter]:
    """A set-up SQLite adapter on a file of its own."""
    adapter = sqlite_adapter(tmp_path / "stm.db")
    await adapter.setup()
    yield adapter
    await adapter.aclose()
