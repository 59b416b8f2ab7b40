"""Every optional storage capability, for every adapter: what an adapter
lacks is filled in here, once.

* :class:`~stm_core.storage.protocol.AtomicServerEdits`: without it, an edit
  that reads and then writes the private-channel list or the categories runs
  under one lock (atomic within this process only), and a configuration
  import takes two transactions;
* :class:`~stm_core.storage.protocol.MemoryHistory`,
  :class:`~stm_core.storage.protocol.UserErasure` and
  :class:`~stm_core.storage.protocol.StorageInventory`: without them, asking
  for the capability raises a typed error naming the adapter (a row's kept
  revisions, for export and erasure, read as none);
* :class:`~stm_core.storage.protocol.BoundedReads`: without it, a server's
  newest rows are cut from its whole load window.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager

from stm_core.errors import ConfigurationError, StorageError
from stm_core.storage.newest import newest_server_rows
from stm_core.storage.protocol import (
    AtomicServerEdits,
    MemoryHistory,
    StorageAdapter,
    StorageInventory,
    UserErasure,
)
from stm_core.storage.records import (
    CategoryRecord,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    NewestRows,
    ServerSettings,
)


class CompleteStorage:
    """The adapter ``adapter()`` returns (asked at each call, so a swapped
    adapter is followed) with every optional capability."""

    def __init__(self, adapter: Callable[[], StorageAdapter]) -> None:
        self._adapter = adapter
        self._edit_lock = asyncio.Lock()

    def serialised(self) -> AbstractAsyncContextManager[object]:
        """Taken around an edit that reads, then writes the private-channel
        list or the categories; nothing to take where the adapter makes its
        own edits atomic."""
        if isinstance(self._adapter(), AtomicServerEdits):
            return contextlib.nullcontext()
        return self._edit_lock

    async def change_private_channels(self, server_id: str, *, add: frozenset[str],
                                      remove: frozenset[str], now_ms: int) -> ServerSettings:
        """``AtomicServerEdits.change_private_channels``."""
        adapter = self._adapter()
        if isinstance(adapter, AtomicServerEdits):
            return await adapter.change_private_channels(server_id, add=add, remove=remove,
                                                         now_ms=now_ms)
        async with self._edit_lock:
            current = await adapter.load_server_settings(server_id)
            return await adapter.update_server_settings(
                server_id, {"private_channel_ids": (current.private_channel_ids | add) - remove},
                now_ms=now_ms)

    async def replace_server_config(self, server_id: str, changes: Mapping[str, object],
                                    categories: Sequence[CategoryRecord], *,
                                    now_ms: int) -> tuple[ServerSettings, list[MemoryKey]]:
        """``AtomicServerEdits.replace_server_config``; without it, two
        transactions, the categories only when they changed."""
        adapter = self._adapter()
        if isinstance(adapter, AtomicServerEdits):
            return await adapter.replace_server_config(server_id, changes, categories,
                                                       now_ms=now_ms)
        async with self._edit_lock:
            current = await adapter.load_server_settings(server_id)
            stored = await adapter.update_server_settings(server_id, changes, now_ms=now_ms)
            if tuple(categories) == tuple(current.categories):
                return stored, []
            return await adapter.replace_categories(server_id, categories, now_ms=now_ms,
                                                    clear_server_memories=True)

    def history(self) -> MemoryHistory:
        adapter = self._adapter()
        if isinstance(adapter, MemoryHistory):
            return adapter
        raise ConfigurationError(_lacks(adapter, "keeps no memory history (it lacks the "
                                                 "optional MemoryHistory capability)"))

    async def newest_server_rows(self, reads: Sequence[NewestRows]) -> list[list[MemoryRecord]]:
        """Each read's rows, newest first: by the adapter's bounded reads, or
        cut from its whole load window (:mod:`stm_core.storage.newest`)."""
        return await newest_server_rows(self._adapter(), reads)

    async def kept_revisions(self, key: MemoryKey) -> list[MemoryRevision]:
        """The row's kept revisions; none where the adapter keeps no history."""
        adapter = self._adapter()
        return await adapter.list_revisions(key) if isinstance(adapter, MemoryHistory) else []

    def erasure(self) -> UserErasure:
        adapter = self._adapter()
        if isinstance(adapter, UserErasure):
            return adapter
        raise StorageError(_lacks(adapter, "cannot find or remove a user's lines (it does "
                                           "not implement UserErasure)"))

    def inventory(self) -> StorageInventory:
        adapter = self._adapter()
        if isinstance(adapter, StorageInventory):
            return adapter
        raise StorageError(_lacks(adapter, "cannot list servers (it does not implement "
                                           "StorageInventory)"))


def _lacks(adapter: object, what: str) -> str:
    return f"the {getattr(adapter, 'name', type(adapter).__name__)} storage adapter {what}"
