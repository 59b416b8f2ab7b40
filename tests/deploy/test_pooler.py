"""stm behind a real PgBouncer in transaction pooling mode.

Statements go through the pooler (asyncpg's statement cache off, as the docs
say); the listener either goes through it too, where LISTEN hears nothing and
the start-up self-check must say so, or straight to the database
(``listen_url``), where notices work as without a pooler.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import Any

import asyncpg
import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ConfigurationError
from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage import notify
from tests.conftest import asyncpg_dsn, postgres_base_url
from tests.pgbouncer import PgBouncer, find_pgbouncer

pytestmark = pytest.mark.postgres
UNHEARD_AGE_S = 1.0


def turn(channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id="g", has_tools=True)


async def shows(stm: Stm, text: str) -> bool:
    return text in repr(await stm.build_context(turn("c1")))


def unheard_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "do not reach this process" in r.getMessage()]


async def test_a_listener_behind_the_pooler_warns_once_and_keeps_views_briefly(
        pgbouncer: PgBouncer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stm")
    clock = ManualClock()
    settings = Settings(unheard_cache_max_age_seconds=UNHEARD_AGE_S)
    url = pgbouncer.url()
    async with open_store(url, clock=clock, settings=settings, load_entrypoints=False) as a, \
            open_store(url, clock=clock, settings=settings, load_entrypoints=False) as b:
        assert a.listener is not None and b.listener is not None
        assert a.listener.hears_notices is False and b.listener.hears_notices is False
        (warning, _other) = unheard_warnings(caplog)  # one per store, not one per check
        assert "pool_mode=transaction" in warning and "STM_LISTEN_URL" in warning
        assert "1.0 s" in warning

        assert not await shows(b, "from A")  # B's view of the server is now cached
        assert (await a.apply_tool_call(turn("c2"), {"summary": "from A"})).ok
        clock.advance(ms=int(UNHEARD_AGE_S * 1000) - 1)
        assert not await shows(b, "from A")  # no notice came: still the cached view
        clock.advance(ms=2)
        assert await shows(b, "from A")  # the short age, not 300 s, brought it in


async def subscribed(dsn: str) -> tuple[notify.PgSubscription, list[str]]:
    """A subscription made as the adapter makes one (a pooler refused), and
    the channels its connection was asked to LISTEN on."""
    listened: list[str] = []

    class Listening(asyncpg.Connection):  # type: ignore[misc]
        __slots__ = ()

        async def add_listener(self, channel: str, callback: Any) -> None:
            listened.append(channel)
            await super().add_listener(channel, callback)

    async def connect() -> Any:
        return await asyncpg.connect(dsn, statement_cache_size=0, connection_class=Listening)

    subscription = await notify.subscribe(connect, "stm_probe", lambda _n: None,
                                          lambda: None, origin="probe", refuse_pooler=True)
    return subscription, listened


async def test_a_pooler_is_told_from_the_database_and_gets_no_listen(
        pgbouncer: PgBouncer) -> None:
    base = postgres_base_url()
    assert base is not None
    pooled = f"postgresql://{pgbouncer.user}@127.0.0.1:{pgbouncer.port}/{pgbouncer.dbname}"
    for dsn, behind in ((pooled, True), (asyncpg_dsn(base), False)):
        conn = await asyncpg.connect(dsn, statement_cache_size=0)
        try:
            assert await notify.behind_pooler(conn) is behind, dsn
        finally:
            await conn.close()
        subscription, listened = await subscribed(dsn)
        try:
            # Through the pooler: no LISTEN, and the self-check sends no test notice.
            assert listened == ([] if behind else ["stm_probe"])
            assert subscription.listening is not behind

            async def never(_payload: str) -> None:
                raise AssertionError("a test notice was sent")
            if behind:
                assert await subscription.hears(never, "probe", 1.0) is False
                assert subscription.delivers_notices is False
        finally:
            await subscription.close()


async def test_no_listen_is_sent_through_the_pooler(pgbouncer: PgBouncer) -> None:
    # A LISTEN through a pooler in transaction mode stays on a pooled server
    # connection: every later notice reaches whichever client it serves next,
    # and writes queued behind it were seen to wait out db_timeout_seconds.
    url = pgbouncer.url()
    async with open_store(url, load_entrypoints=False) as a, \
            open_store(url, load_entrypoints=False) as b:
        assert a.listener is not None and b.listener is not None
        assert a.listener.hears_notices is False and b.listener.hears_notices is False
        for round_ in range(5):  # writes at once cycle the pooled server connections
            results = await asyncio.gather(*(
                store.apply_tool_call(turn(f"c{i}"), {"summary": f"note {round_}-{i}"})
                for store in (a, b) for i in range(20)))
            assert all(r.ok for r in results)  # and each sent a notice
        await asyncio.sleep(0.2)
    assert "when not linked" not in pgbouncer.log_tail()


async def test_a_direct_listener_hears_writes_made_through_the_pooler(
        pgbouncer: PgBouncer, pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stm")
    clock = ManualClock()
    url = pgbouncer.url()
    async with open_store(url, clock=clock, listen_url=pg_url, load_entrypoints=False) as a, \
            open_store(url, clock=clock, listen_url=pg_url, load_entrypoints=False) as b:
        assert b.listener is not None and b.listener.hears_notices is True
        assert not unheard_warnings(caplog)
        assert not await shows(b, "from A")
        assert (await a.apply_tool_call(turn("c2"), {"summary": "from A"})).ok
        for _ in range(500):  # the notice arrives; the clock never moves
            if await shows(b, "from A"):
                break
            await asyncio.sleep(0.01)
        assert await shows(b, "from A")


async def test_a_pooler_that_drops_the_schema_is_refused_with_the_fix(pg_url: str) -> None:
    executable = find_pgbouncer()
    base = postgres_base_url()
    assert executable is not None and base is not None
    workdir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    # Its server connections work in "public", whatever the URL's ?schema= says.
    wrong = PgBouncer(executable, workdir, base, "public")
    wrong.start()
    try:
        url = wrong.url().replace("schema=public", "schema=" + pg_url.rsplit("schema=", 1)[1])
        with pytest.raises(ConfigurationError, match="connect_query"):
            async with open_store(url, load_entrypoints=False):
                pass
    finally:
        wrong.stop()
        for path in workdir.iterdir():
            path.unlink()
        workdir.rmdir()


async def test_open_through_the_pooler_reports_the_schema_it_works_in(
        pgbouncer: PgBouncer) -> None:
    settings = attrs.evolve(Settings(), cross_process_invalidation=False)
    async with open_store(pgbouncer.url(), settings=settings, load_entrypoints=False) as stm:
        assert (await stm.apply_tool_call(turn("c1"), {"summary": "pooled"})).ok
        assert await shows(stm, "pooled")
