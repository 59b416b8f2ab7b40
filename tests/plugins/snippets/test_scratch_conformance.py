"""The storage conformance suite, run against the guide's example adapter."""

# -- start conformance --
from collections.abc import AsyncIterator

import pytest
from stm_scratch import ScratchAdapter

from stm_core.testing import StorageAdapterConformance


class TestScratchAdapter(StorageAdapterConformance):
    @pytest.fixture
    async def adapter(self) -> AsyncIterator[ScratchAdapter]:
        adapter = ScratchAdapter("scratch://")
        await adapter.setup()
        yield adapter
        await adapter.aclose()
# -- end conformance --
