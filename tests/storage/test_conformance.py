"""The storage conformance suite on every built-in adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stm_core.plugins import create_plugin_manager
from stm_core.plugins.hooks import Hooks
from stm_core.settings import Settings
from stm_core.storage.protocol import StorageAdapter
from stm_core.testing.conformance import (
    BoundedReadsConformance,
    MemoryHistoryConformance,
    StorageAdapterConformance,
    TimedPurgeConformance,
    UserErasureConformance,
)


async def open_adapter(url: str) -> StorageAdapter:
    hooks = Hooks(create_plugin_manager(load_entrypoints=False))
    adapter = hooks.storage_adapter_for(url).factory(url, Settings())
    status = await adapter.setup()
    assert status.created
    return adapter


class TestMemoryAdapter(StorageAdapterConformance, MemoryHistoryConformance,
                        UserErasureConformance, BoundedReadsConformance):
    @pytest.fixture
    async def adapter(self) -> AsyncIterator[StorageAdapter]:
        adapter = await open_adapter("memory://")
        yield adapter
        await adapter.aclose()


class TestSqliteFileAdapter(StorageAdapterConformance, MemoryHistoryConformance,
                        UserErasureConformance, TimedPurgeConformance,
                        BoundedReadsConformance):
    @pytest.fixture
    async def adapter(self, tmp_path: Path) -> AsyncIterator[StorageAdapter]:
        adapter = await open_adapter(f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}")
        yield adapter
        await adapter.aclose()


class TestSqliteInMemoryAdapter(StorageAdapterConformance, MemoryHistoryConformance,
                        UserErasureConformance, TimedPurgeConformance,
                        BoundedReadsConformance):
    @pytest.fixture
    async def adapter(self) -> AsyncIterator[StorageAdapter]:
        adapter = await open_adapter("sqlite+aiosqlite:///:memory:")
        yield adapter
        await adapter.aclose()


class TestPostgresAdapter(StorageAdapterConformance, MemoryHistoryConformance,
                        UserErasureConformance, TimedPurgeConformance,
                        BoundedReadsConformance):
    @pytest.fixture
    async def adapter(self, pg_url: str) -> AsyncIterator[StorageAdapter]:
        adapter = await open_adapter(pg_url)
        yield adapter
        await adapter.aclose()
