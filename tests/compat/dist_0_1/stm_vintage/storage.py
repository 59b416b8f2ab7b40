"""The ``vintage://`` storage adapter: the in-memory adapter, counting writes."""

from stm_core import StorageAdapterSpec, hookimpl
from stm_plugins.memory_storage import MemoryAdapter


class VintageAdapter(MemoryAdapter):
    def __init__(self, url, settings=None):
        super().__init__(url, settings)
        self.memory_writes = 0

    async def write_memory(self, writes):
        records = await super().write_memory(writes)
        self.memory_writes += len(records)
        return records


@hookimpl
def stm_register_storage_adapters():
    return [StorageAdapterSpec(name="vintage", schemes=("vintage",), factory=VintageAdapter,
                               description="dictionaries, with a write counter")]
