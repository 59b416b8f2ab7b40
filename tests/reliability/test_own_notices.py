"""A store hears its own writes' notices and drops them without parsing them,
while other processes' notices still reach its cache.

The early drop recognises a notice by how PostgreSQL renders the payload a
write statement builds (``notify.own_write_prefix``); the first test pins
that rendering down for every kind of write, so a change in it shows here
(the drop would silently fall back to parsing). The second runs real
processes next to a store in the test process, all writing at once.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import ChangeNotice, MemoryFilter, MemoryKey
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage import notify
from tests.conftest import asyncpg_dsn, postgres_base_url

from .procs import shards

pytestmark = pytest.mark.postgres
SERVER = "guild"
CHILDREN = 3
WRITES_EACH = 15
OWN_TURNS = 40


async def one_turn(stm: Stm, channel: str, text: str) -> None:
    turn = Turn(user_id="u1", channel_id=channel, server_id=SERVER, persona_id="p")
    await stm.record_turn(turn, [HistoryMessage(author_type="user", content=text,
                                                speaker_name="u1")],
                          [PersonaResponse(persona_id="p", persona_name="P", content="ok")])


async def test_every_kind_of_write_notice_begins_with_its_stores_prefix(pg_url: str) -> None:
    import asyncpg

    heard: list[str] = []
    async with open_store(pg_url, clock=ManualClock(), load_entrypoints=False) as stm:
        adapter: Any = stm.adapter
        base = postgres_base_url()
        assert base is not None
        raw = await asyncpg.connect(asyncpg_dsn(base))
        try:
            await raw.add_listener(adapter.channel, lambda *args: heard.append(args[-1]))
            await one_turn(stm, "c1", "hello")  # a capture: two rows in one statement
            await stm.admin.set_server_params(SERVER, refresh_cadence=7)  # settings
            await adapter.set_user_prefs("u1", crossserver_opt_in=True, now_ms=1)  # prefs
            await adapter.delete_memories(MemoryFilter(server_id=SERVER))  # deletes
            for _ in range(500):
                if len(heard) >= 4:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # nothing else comes
        finally:
            await raw.close()
    prefix = notify.own_write_prefix(adapter.instance_id)
    assert len(heard) == 4 and all(p.startswith(prefix) for p in heard), heard
    kinds = {kind for p in heard for kind in json.loads(p) if kind != "o"}
    assert kinds == {"k", "s", "u"}
    # Another store's prefix matches none of them.
    assert not any(p.startswith(notify.own_write_prefix("0" * 32)) for p in heard)


async def test_own_notices_are_dropped_unparsed_and_other_processes_still_invalidate(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[ChangeNotice] = []
    real_decode = notify.decode_notice

    def recording_decode(payload: str) -> ChangeNotice | None:
        notice = real_decode(payload)
        if notice is not None:
            decoded.append(notice)
        return notice

    monkeypatch.setattr(notify, "decode_notice", recording_decode)
    settings = attrs.evolve(Settings(), listener_check_seconds=1.0)
    async with shards(pg_url, CHILDREN) as children, \
            open_store(pg_url, settings=settings, clock=ManualClock(),
                       load_entrypoints=False) as here:
        assert here.listener is not None
        await here.listener.wait_connected(10)
        assert here.listener.hears_notices is True  # the own self-check still comes back
        own_id = cast(Any, here.adapter).instance_id
        # A warm view the others' writes must reach.
        view = await here.engine.server_memories(SERVER)
        before = attrs.evolve(here.listener.stats)

        async def child_writes(n: int) -> None:
            for i in range(WRITES_EACH):
                await children[n].call("write", "wrote", server=SERVER, channel=f"news{n}",
                                       text=f"p{n} <v{i}>")

        async def own_turns() -> None:
            for i in range(OWN_TURNS):
                await one_turn(here, "own", f"turn {i}")
                await asyncio.sleep(0.002)

        await asyncio.gather(own_turns(), *(child_writes(n) for n in range(CHILDREN)))

        last = f"<v{WRITES_EACH - 1}>"
        for _ in range(500):
            summaries = {n: view.records.get(MemoryKey.server(SERVER, f"news{n}", None))
                         for n in range(CHILDREN)}
            if all(r is not None and r.summary and last in r.summary
                   for r in summaries.values()):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError(f"other processes' writes never reached the cache: {summaries}")

        stats = here.listener.stats
        own = stats.own_notices - before.own_notices
        others = stats.notices - before.notices - own
        # One notice per own turn, each skipped; none of them was parsed.
        assert own >= OWN_TURNS
        assert all(n.origin != own_id for n in decoded)
        assert others >= CHILDREN * WRITES_EACH
        assert len({n.origin for n in decoded}) >= CHILDREN
        assert stats.rows_refreshed - before.rows_refreshed >= CHILDREN
        # The children dropped their own notices too and heard everyone else's.
        for child in children:
            child_stats = (await child.call("listener", "listener"))["stats"]
            assert child_stats["own_notices"] >= WRITES_EACH
            assert child_stats["notices"] - child_stats["own_notices"] >= OWN_TURNS
