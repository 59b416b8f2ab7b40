"""Staleness after the listening connection dies silently (a hung network:
no error, no notices), measured through the TCP proxy of the fault tests.

Store B listens through the proxy (its ``listen_url``; its reads and writes go
straight to the database); store A writes directly. Each sample waits a random part of the
check interval (so the stall falls anywhere in the check cycle), stalls the
proxy, makes a channel private in A and times how long B still shows that
channel's memory. The bound is ``listener_check_seconds``
(docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import attrs
import pytest

from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage.postgres_adapter import PostgresAdapter

from .pgproxy import PgProxy
from .support import add_figure, full_scale, percentile, scaled

SERVER = "g"
pytestmark = pytest.mark.postgres


def turn(channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=SERVER, has_tools=True)


async def shows_secret(stm: Stm) -> bool:
    return "secret" in repr(await stm.build_context(turn("c1")))


async def until(check: Any, timeout_s: float) -> float:
    """Seconds until ``check()`` is true (fails after ``timeout_s``)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not await check():
        assert loop.time() - start < timeout_s, "never happened"
        await asyncio.sleep(0.005)
    return loop.time() - start


async def test_a_silent_listener_death_is_noticed_within_the_check_interval(
        pg_url: str, figures: dict[str, Any]) -> None:
    check_s = 5.0 if full_scale() else 1.5  # the default, or a quicker CI share
    samples_wanted = scaled(8, 20)
    settings = attrs.evolve(Settings(), listener_check_seconds=check_s)
    proxy, proxied = await PgProxy.start_for(pg_url)
    rng = random.Random(5)
    samples: list[float] = []
    try:
        async with open_store(pg_url, settings=settings, load_entrypoints=False) as a, \
                open_store(pg_url, settings=settings, load_entrypoints=False,
                           listen_url=proxied) as b:
            assert isinstance(b.adapter, PostgresAdapter)
            assert b.adapter.listen_target.dsn != b.adapter.target.dsn
            assert b.listener is not None
            assert (await a.apply_tool_call(turn("c2"), {"summary": "secret"})).ok
            for _ in range(samples_wanted):
                await b.listener.wait_connected(60)
                await until(lambda: shows_secret(b), 60)
                await asyncio.sleep(rng.uniform(0.0, check_s))
                proxy.stall()
                write = asyncio.ensure_future(
                    a.admin.set_private_channels(SERVER, channel_ids=["c2"]))
                samples.append(await until(lambda: _not(shows_secret(b)), 3 * check_s + 15))
                await write
                await a.admin.set_private_channels(SERVER, channel_ids=[])
                proxy.restore()
            assert b.listener.stats.connection_losses >= samples_wanted
    finally:
        await proxy.close()
    p99, worst = percentile(samples, 99), max(samples)
    assert worst <= check_s, f"stale for {worst:.2f} s; the bound is {check_s} s"
    add_figure(figures, "silent_listener_samples", len(samples))
    add_figure(figures, "silent_listener_check_seconds", check_s)
    add_figure(figures, "silent_listener_staleness_p50_s", round(percentile(samples, 50), 3))
    add_figure(figures, "silent_listener_staleness_p99_s", round(p99, 3))
    add_figure(figures, "silent_listener_staleness_max_s", round(worst, 3))


async def _not(check: Any) -> bool:
    return not await check
