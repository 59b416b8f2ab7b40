"""A storage adapter plugin: the hook is synchronous, the adapter is async."""

# -- start async-adapter --
from collections.abc import Iterable, Sequence

from stm_core import Settings, StorageAdapterSpec, hookimpl
from stm_core.storage.records import MemoryRecord, MemoryWrite
from stm_plugins.memory_storage import MemoryAdapter


class ScratchAdapter(MemoryAdapter):
    """The in-memory adapter under its own URL scheme, counting memory writes.

    Every method stm awaits (setup, capture, write_memory, ...) is a coroutine
    of the adapter; see stm_core.storage.protocol.StorageAdapter.
    """

    def __init__(self, url: str, settings: Settings | None = None) -> None:
        super().__init__(url, settings)
        self.memory_writes = 0

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        records = await super().write_memory(writes)
        self.memory_writes += len(records)
        return records


@hookimpl
def stm_register_storage_adapters() -> Iterable[StorageAdapterSpec]:
    # Cheap and synchronous: it only describes the adapter. stm builds it with
    # factory(url, settings) when a store opens, then awaits adapter.setup().
    return [StorageAdapterSpec(name="scratch", schemes=("scratch",), factory=ScratchAdapter,
                               description="dictionaries, with a write counter")]
# -- end async-adapter --
