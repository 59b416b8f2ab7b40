"""Setting a server's state straight through the adapter (independent of the admin API)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from stm_core.storage.records import CategoryRecord, ServerSettings
from stm_core.store import Stm

Configure = Callable[..., Awaitable[ServerSettings]]


@pytest.fixture
def configure(stm: Stm) -> Configure:
    """``await configure(server_id, categories=[(label, description), ...], **settings)``."""

    async def apply(server_id: str, *, categories: Sequence[tuple[str, str]] = (),
                    **changes: Any) -> ServerSettings:
        now = stm.clock.now_ms()
        engine = stm.engine
        settings = await engine.write_settings(
            server_id, lambda: stm.adapter.update_server_settings(server_id, changes, now_ms=now))
        if categories:
            records = [CategoryRecord(position=i, label=label, description=description)
                       for i, (label, description) in enumerate(categories)]
            settings, _ = await engine.write_categories(
                server_id, lambda: stm.adapter.replace_categories(
                    server_id, records, now_ms=now, clear_server_memories=False))
        return settings

    return apply
