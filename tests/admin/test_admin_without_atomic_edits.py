"""A storage adapter from a plugin that predates ``AtomicServerEdits`` keeps
working: private-channel adds and removes fall back to read, change, write
back under the store's lock (nothing lost within one process), and an
import takes two transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from stm_core.plugin_types import StorageAdapterSpec

from hookspecs import hookimpl
from stm_core.settings import Settings
from stm_core.storage.protocol import AtomicServerEdits, StorageAdapter
from stm_core.storage.records import MemoryKey, MemoryWrite, ServerSettings
from stm_core.store import open_store
from stm_plugins.memory_storage import MemoryAdapter

OPTIONAL = {"change_private_channels", "replace_server_config"}


class PlainAdapter:
    """The memory adapter without the optional methods, and with a pause in
    every settings read so concurrent read-modify-writes interleave."""

    name = "plain"

    def __init__(self) -> None:
        self._inner = MemoryAdapter()

    def __getattr__(self, name: str) -> Any:
        if name in OPTIONAL:
            raise AttributeError(name)
        return getattr(self._inner, name)

    async def load_server_settings(self, server_id: str) -> ServerSettings:
        stored = await self._inner.load_server_settings(server_id)
        await asyncio.sleep(0)  # others may write meanwhile
        return stored


class PlainPlugin:
    @hookimpl
    def stm_register_storage_adapters(self) -> Iterable[StorageAdapterSpec]:
        return [StorageAdapterSpec(name="plain", schemes=("plain",),
                                   factory=lambda url, settings: PlainAdapter())]


def test_the_plain_adapter_lacks_the_capability() -> None:
    adapter = PlainAdapter()
    assert isinstance(adapter, StorageAdapter)
    assert not isinstance(adapter, AtomicServerEdits)


async def test_concurrent_adds_and_removes_fall_back_without_losing_any() -> None:
    async with open_store("plain://", settings=Settings(), plugins=[PlainPlugin()],
                          load_entrypoints=False) as stm:
        await stm.admin.add_private_channels("g", channel_ids=[f"r{i}" for i in range(20)])
        await asyncio.gather(
            *(stm.admin.add_private_channels("g", channel_ids=[f"a{i}"]) for i in range(30)),
            *(stm.admin.remove_private_channels("g", channel_ids=[f"r{i}"]) for i in range(20)))
        stored = (await stm.admin.privacy("g")).private_channel_ids
        assert set(stored) == {f"a{i}" for i in range(30)}


async def test_import_falls_back_to_two_writes_with_the_same_result() -> None:
    async with open_store("plain://", settings=Settings(), plugins=[PlainPlugin()],
                          load_entrypoints=False) as stm:
        key = MemoryKey.server("g", "c1", None)
        await stm.adapter.write_memory([MemoryWrite(key=key, now_ms=1, set_summary=True,
                                                    summary="kept")])
        doc = await stm.admin.export_config("g")
        doc["params"]["refresh_cadence"] = 7
        stored = await stm.admin.import_config("g", doc)
        assert stored["params"]["refresh_cadence"] == 7
        assert await stm.adapter.get_memory(key) is not None  # same categories: kept
        doc["categories"] = [{"label": "Mood", "description": "how people feel"}]
        stored = await stm.admin.import_config("g", doc)
        assert [c["label"] for c in stored["categories"]] == ["Mood"]
        assert await stm.adapter.get_memory(key) is None  # categories changed: cleared


async def test_import_of_the_servers_own_categories_keeps_its_memories() -> None:
    async with open_store("plain://", settings=Settings(), plugins=[PlainPlugin()],
                          load_entrypoints=False) as stm:
        await stm.admin.set_categories("g", ["Mood: how people feel"])
        key = MemoryKey.server("g", "c1", None)
        await stm.adapter.write_memory([MemoryWrite(key=key, now_ms=1, set_categories=True,
                                                    categories={"mood": "calm"})])
        doc = await stm.admin.export_config("g")
        doc["params"]["refresh_cadence"] = 7
        await stm.admin.import_config("g", doc)
        assert await stm.adapter.get_memory(key) is not None
