"""A view dropped while it loads (another process changed it) is not
installed from the load that was already running: the next read reloads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from stm_core.storage.records import MemoryKey
from stm_core.store import Stm
from tests.conftest import OpenStm

Drop = Callable[[Stm], None]
Read = Callable[[Stm], Awaitable[Any]]

CASES: dict[str, tuple[str, Drop, Read, Callable[[Stm], Any]]] = {
    "settings": ("load_server_settings", lambda s: s.cache.drop_settings("g"),
                 lambda s: s.engine.server_settings("g"), lambda s: s.cache.settings.peek("g")),
    "user": ("load_user_prefs", lambda s: s.cache.drop_user("u"),
             lambda s: s.engine.user_view("u"), lambda s: s.cache.users.peek("u")),
    "server rows": ("newest_server_memories",
                    lambda s: s.cache.drop_scopes([MemoryKey.server("g", "c1", "p")]),
                    lambda s: s.engine.server_memories("g"), lambda s: s.cache.servers.peek("g")),
    "everything": ("load_server_settings", lambda s: s.engine.flush(),
                   lambda s: s.engine.server_settings("g"), lambda s: s.cache.settings.peek("g")),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_drop_during_a_load_keeps_the_loaded_value_out_of_the_cache(
        open_stm: OpenStm, case: str) -> None:
    method, drop, read, cached = CASES[case]
    async with open_stm("memory://") as stm:
        drop(stm)  # an earlier drop: the epoch has moved once already
        inner = getattr(stm.adapter, method)
        started, release = asyncio.Event(), asyncio.Event()

        async def slow(*args: Any, **kwargs: Any) -> Any:
            started.set()
            await release.wait()
            return await inner(*args, **kwargs)

        setattr(stm.adapter, method, slow)
        reading = asyncio.create_task(read(stm))
        await started.wait()
        drop(stm)  # a change notice arrives while the load runs
        release.set()
        await reading
        assert cached(stm) is None
        setattr(stm.adapter, method, inner)
        await read(stm)
        assert cached(stm) is not None  # a load under the current epoch is kept
