"""Cached views keep recency order and stay bounded, whatever the server's size.

A warm build walks a server's view newest first and stops at the cap, so the
view must always be in ``updated_at_ms`` order, after loads, out-of-order
writes, deletes and other processes' notices alike; and one server's view,
its known-absent channels and the number of views are all bounded.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.engine.cache import MemoryView
from stm_core.errors import ConfigurationError
from stm_core.models import CrudeMessage
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey, MemoryRecord
from stm_core.store import Stm, open_store

from .support import GUILD, OpenStm, make_turn, other_text, server_key, user_key, write

ROOT = Path(__file__).resolve().parents[2]


def bounded(rows: int) -> Settings:
    return Settings(cache_max_rows_per_view=rows)


def in_order(view: MemoryView) -> bool:
    """Oldest first by time, and the order holds every row and nothing else."""
    rows = view.oldest_first()
    times = [r.updated_at_ms for r in rows]
    return (times == sorted(times) and len(rows) == len(view.records)
            and all(view.records[r.key] is r for r in rows))


async def db_rows(stm: Stm, server: str = GUILD) -> list[MemoryRecord]:
    return await stm.adapter.list_memories(MemoryFilter(server_id=server, scope_kind="server"))


async def test_a_server_view_keeps_only_its_newest_rows(open_stm: OpenStm, backend_url: str,
                                                        clock: ManualClock) -> None:
    async with open_stm(backend_url, settings=bounded(20)) as stm:
        await stm.build_context(make_turn())  # the view is loaded (empty)
        for n in range(60):
            clock.advance(ms=1000)
            await write(stm, server_key(f"c{n:02d}"), summary=f"talk {n:02d}")
        view = await stm.engine.server_memories(GUILD)
        assert len(view.records) == 20
        assert [r.key.channel_id for r in view.oldest_first()] == [
            f"c{n:02d}" for n in range(40, 60)]
        assert view.may_lack(clock.now_ms() - 21_000) and not view.may_lack(clock.now_ms())
        text = other_text(await stm.build_context(make_turn()))
        assert text is not None
        assert [n for n in range(60) if f"talk {n:02d}" in text] == [57, 58, 59]
        # A dropped row is still in the database, and reading it asks there.
        dropped = await stm.engine.live_record(server_key("c03"))
        assert dropped is not None and dropped.summary == "talk 03"
        # After a restart the load keeps the newest rows too.
        stm.engine.flush()
        reloaded = await stm.engine.server_memories(GUILD)
        assert [r.key.channel_id for r in reloaded.oldest_first()] == [
            f"c{n:02d}" for n in range(40, 60)]


async def test_known_absent_channels_are_bounded(open_stm: OpenStm, backend_url: str) -> None:
    async with open_stm(backend_url, settings=bounded(10)) as stm:
        for n in range(50):  # a turn in a channel without a row probes it
            await stm.build_context(make_turn(channel_id=f"empty{n}"))
        view = await stm.engine.server_memories(GUILD)
        assert len(view.absent) == 10
        assert server_key("empty49") in view.absent and server_key("empty0") not in view.absent
        # A forgotten probe asks again and still finds nothing.
        assert await stm.engine.live_record(server_key("empty0")) is None
        await write(stm, server_key("empty49"), summary="now it exists")
        assert server_key("empty49") not in view.absent


async def test_the_lru_drops_whole_servers_beyond_its_bound(open_stm: OpenStm,
                                                            backend_url: str) -> None:
    async with open_stm(backend_url, settings=Settings(cache_max_servers=3)) as stm:
        for n in range(5):
            await write(stm, server_key("c1", server=f"g{n}"), summary=f"in g{n}")
            await stm.build_context(make_turn(server_id=f"g{n}"))
        assert len(stm.cache.servers) == 3 and "g0" not in stm.cache.servers
        text = other_text(await stm.build_context(make_turn(server_id="g0")))
        assert text is not None and "in g0" in text  # reloaded, not lost


@pytest.mark.parametrize("value", [0, -1])
def test_the_row_bound_must_be_positive(value: int) -> None:
    with pytest.raises(ConfigurationError):
        Settings(cache_max_rows_per_view=value)


def test_the_row_bound_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STM_CACHE_MAX_ROWS_PER_VIEW", "77")
    assert Settings.from_env().cache_max_rows_per_view == 77
    monkeypatch.setenv("STM_CACHE_MAX_ROWS_PER_VIEW", "0")
    with pytest.raises(ConfigurationError):
        Settings.from_env()


# -- the ordered view against a model ------------------------------------------------

KEYS = [MemoryKey.server("g", f"c{n}", None) for n in range(60)]
OPS = st.lists(st.tuples(st.sampled_from(("apply", "apply", "apply", "forget")),
                         st.integers(0, len(KEYS) - 1), st.integers(0, 40),
                         st.integers(1, 4)), max_size=300)


def record(key: MemoryKey, at: int, rev: int) -> MemoryRecord:
    return MemoryRecord(key=key, summary=f"{key.channel_id}@{at}", updated_at_ms=at, rev=rev)


@settings(max_examples=200, deadline=None)
@given(ops=OPS, max_rows=st.integers(1, 70),
       loaded=st.lists(st.tuples(st.integers(0, len(KEYS) - 1), st.integers(0, 40)),
                       max_size=60, unique_by=lambda t: t[0]))
def test_the_view_is_always_newest_first_and_bounded(
        ops: list[tuple[str, int, int, int]], max_rows: int,
        loaded: list[tuple[int, int]]) -> None:
    """Times collide often and writes arrive far out of order; the view must
    show what a full sort of the model shows (equal times: by the keys'
    fields, whatever order the rows arrived in), trimmed to its bound, with
    nothing missing that it claims to hold."""
    rows = [record(KEYS[k], at, 1) for k, at in loaded]
    view = MemoryView(rows, max_rows=max_rows)
    model: dict[MemoryKey, MemoryRecord] = {r.key: r for r in rows}

    def expected() -> list[MemoryKey]:
        order = sorted(model.values(), reverse=True,
                       key=lambda r: (r.updated_at_ms, attrs.astuple(r.key)))
        return [r.key for r in order]

    def trim() -> None:
        while len(model) > max_rows:
            del model[expected()[-1]]

    trim()
    for op, k, at, rev in ops:
        key = KEYS[k]
        if op == "forget":
            view.forget_row(key)
            model.pop(key, None)
            assert key in view.absent
            continue
        current = model.get(key)
        if current is None or rev >= current.rev:
            model[key] = record(key, at, rev)
        view.apply(record(key, at, rev))
        trim()
        assert key not in view.absent
        assert [r.key for r in view.newest_first()] == expected()
        assert len(view.records) <= max_rows and in_order(view)
        assert all(view.records[key] == model[key] for key in view.records)
        assert len(view.absent) <= max_rows


@pytest.mark.parametrize("behind", [0, 1, 23, 24, 25, 150, 199, 200])
@pytest.mark.parametrize("tied", [False, True])
def test_a_write_behind_many_newer_rows_goes_before_them_and_moves_nothing_else(
        behind: int, tied: bool) -> None:
    rows = [record(MemoryKey.server("g", f"r{n}", None), n * 10, 1) for n in range(200)]
    view = MemoryView(rows, max_rows=500)
    # Stamped just before (or, tied, at) the time of the row `behind` from the end.
    at = (200 - behind) * 10 - (0 if tied and behind else 1)
    late = record(MemoryKey.server("g", "late", None), at, 1)
    view.apply(late)
    newest_first = [r.key for r in view.newest_first()]
    # Tied, it stands among the rows of its time by key: "late" sorts before
    # "r...", so it shows just after the row it ties with.
    assert newest_first.index(late.key) == behind
    others = [k for k in newest_first if k != late.key]
    assert others == [r.key for r in reversed(rows)]
    assert in_order(view) and view.records[late.key] is late


@settings(max_examples=100, deadline=None)
@given(times=st.lists(st.integers(0, 3), min_size=1, max_size=len(KEYS)),
       order=st.randoms(use_true_random=False))
def test_rows_of_equal_times_stand_in_one_order_whatever_order_they_came_in(
        times: list[int], order: random.Random) -> None:
    """Two processes hear the same writes in different orders, and a third
    loads them from the database in an order of its own: all three show the
    rows in one order (a prompt that does not change with who served it)."""
    rows = [record(KEYS[k], at, 1) for k, at in enumerate(times)]
    shuffled = rows[:]
    order.shuffle(shuffled)
    heard_in_order, heard_shuffled = MemoryView(max_rows=100), MemoryView(max_rows=100)
    for row in rows:
        heard_in_order.apply(row)
    for row in shuffled:
        heard_shuffled.apply(row)
    loaded = MemoryView(reversed(shuffled), max_rows=100)
    shown = [r.key for r in heard_in_order.newest_first()]
    assert [r.key for r in heard_shuffled.newest_first()] == shown
    assert [r.key for r in loaded.newest_first()] == shown
    assert in_order(heard_in_order) and in_order(heard_shuffled) and in_order(loaded)


# -- out-of-order writers, in this process and in others -----------------------------

async def test_concurrent_out_of_order_writes_keep_the_view_ordered(
        open_stm: OpenStm, backend_url: str) -> None:
    clock = ManualClock(1_000_000)
    async with open_stm(backend_url, clock=clock, settings=bounded(40)) as stm:
        await stm.build_context(make_turn())
        rng = random.Random(3)

        async def writer(w: int) -> None:
            for n in range(25):
                key = server_key(f"w{w}c{n % 15}")
                at = 1_000_000 + rng.randrange(0, 200) * 1000  # times jump back and forth
                await stm.engine.capture([CaptureWrite(
                    key=key, now_ms=at, counter_increment=1, messages=(CrudeMessage(
                        role="user", content=f"{w}/{n}", speaker_name="A",
                        timestamp_ms=at),))])

        await asyncio.gather(*(writer(w) for w in range(6)))
        view = await stm.engine.server_memories(GUILD)
        assert in_order(view) and len(view.records) == 40
        stored = {r.key: r for r in await db_rows(stm)}
        assert all(stored[k] == r for k, r in view.records.items())
        # A stored row missing from the view is one the bound dropped.
        assert all(r.key in view.records or view.may_lack(r.updated_at_ms)
                   for r in stored.values())
        clock.set(1_300_000)
        ours = await stm.build_context(make_turn())
    async with open_stm(backend_url, clock=clock, settings=bounded(10_000)) as unbounded:
        if backend_url.startswith("memory"):
            return  # a private in-memory database: nothing to reopen
        assert await unbounded.build_context(make_turn()) == ours


async def test_a_build_reads_past_the_bound_when_the_newest_rows_are_hidden(
        open_stm: OpenStm, backend_url: str, clock: ManualClock) -> None:
    """The 8 newest rows belong to another persona lineage: a view of 5 rows
    holds none that may be shown, and the build still finds the 3 it shows."""
    async with open_stm(backend_url, settings=bounded(5)) as stm:
        await stm.build_context(make_turn(persona_lineage_id="mine"))
        for n in range(6):
            clock.advance(ms=1000)
            await write(stm, server_key(f"m{n}", persona="p1"), summary=f"mine {n}",
                        lineage="mine")
        for n in range(8):
            clock.advance(ms=1000)
            await write(stm, server_key(f"t{n}", persona="p2"), summary=f"theirs {n}",
                        lineage="theirs")
        view = await stm.engine.server_memories(GUILD)
        assert not any(k.channel_id.startswith("m") for k in view.records)
        text = other_text(await stm.build_context(make_turn(persona_lineage_id="mine")))
        assert text is not None
        assert [n for n in range(6) if f"mine {n}" in text] == [3, 4, 5]
        assert "theirs" not in text
        assert len(view.records) == 5  # the cached view kept its bound


async def test_a_dm_build_reads_past_the_bound_of_the_users_view(
        open_stm: OpenStm, backend_url: str, clock: ManualClock) -> None:
    """The same for a direct message: the user's own rows in other DMs."""
    dm_turn = make_turn(server_id=None, channel_id="dm-now", persona_lineage_id="mine")
    async with open_stm(backend_url, settings=bounded(5)) as stm:
        await stm.build_context(dm_turn)
        for n in range(6):
            clock.advance(ms=1000)
            await write(stm, user_key(f"dm-m{n}"), summary=f"mine {n}", lineage="mine")
        for n in range(8):
            clock.advance(ms=1000)
            await write(stm, user_key(f"dm-t{n}"), summary=f"theirs {n}", lineage="theirs")
        text = other_text(await stm.build_context(dm_turn))
        assert text is not None
        assert [n for n in range(6) if f"mine {n}" in text] == [3, 4, 5]
        assert "theirs" not in text


async def test_reading_past_the_bound_keeps_every_row_of_the_window(
        open_stm: OpenStm, clock: ManualClock) -> None:
    """More than a thousand newer rows of another lineage: the read past the
    bound has no bound of its own, so the three shown rows are still found."""
    async with open_stm("memory://", settings=bounded(5)) as stm:
        await stm.build_context(make_turn(persona_lineage_id="mine"))
        for n in range(3):
            clock.advance(ms=1000)
            await write(stm, server_key(f"m{n}", persona="p1"), summary=f"mine {n}",
                        lineage="mine")
        for n in range(1005):
            clock.advance(ms=10)
            await write(stm, server_key(f"t{n}", persona="p2"), summary="theirs",
                        lineage="theirs")
        text = other_text(await stm.build_context(make_turn(persona_lineage_id="mine")))
        assert text is not None
        assert [n for n in range(3) if f"mine {n}" in text] == [0, 1, 2]


WRITER = textwrap.dedent("""
    import asyncio, random, sys
    from stm_core._util.clock import ManualClock
    from stm_core.models import CrudeMessage
    from stm_core.settings import Settings
    from stm_core.storage.records import CaptureWrite, MemoryKey
    from stm_core.store import open_store

    async def main(url, seed):
        rng = random.Random(seed)
        async with open_store(url, clock=ManualClock(0), settings=Settings(),
                              load_entrypoints=False, listen_for_changes=False) as stm:
            for n in range(30):
                at = 5_000_000 + rng.randrange(0, 300) * 1000
                key = MemoryKey.server("G", f"p{seed}c{n % 12}", None)
                await stm.engine.capture([CaptureWrite(key=key, now_ms=at, counter_increment=1,
                    messages=(CrudeMessage(role="user", content=str(n), speaker_name="B",
                                           timestamp_ms=at),))])

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
""")


@pytest.mark.postgres
async def test_other_processes_out_of_order_writes_reach_an_ordered_view(
        pg_url: str) -> None:
    """Three processes write with clocks that jump back and forth; this store
    holds the server's view and follows their notices: it ends ordered, equal
    to the database, and builds what a freshly loaded store builds."""
    clock = ManualClock(5_400_000)
    chosen = bounded(30)
    async with open_store(pg_url, clock=clock, settings=chosen, load_entrypoints=False) as stm:
        assert stm.listener is not None
        await stm.build_context(make_turn())
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, pg_url, str(seed), env=env,
            stderr=subprocess.PIPE) for seed in range(3)]
        for proc in procs:
            _, err = await proc.communicate()
            assert proc.returncode == 0, err.decode()[-2000:]
        stored = {r.key: r for r in await db_rows(stm)}
        assert len(stored) == 36

        async def caught_up() -> bool:
            view = await stm.engine.server_memories(GUILD)
            return all(view.records.get(r.key) == r
                       or (r.key not in view.records and view.may_lack(r.updated_at_ms))
                       for r in stored.values())

        deadline = asyncio.get_running_loop().time() + 10
        while not await caught_up():
            assert asyncio.get_running_loop().time() < deadline, "notices never arrived"
            await asyncio.sleep(0.01)
        view = await stm.engine.server_memories(GUILD)
        assert in_order(view) and len(view.records) <= 30
        ours = await stm.build_context(make_turn())
    async with open_store(pg_url, clock=clock, settings=chosen,
                          load_entrypoints=False, listen_for_changes=False) as fresh:
        assert await fresh.build_context(make_turn()) == ours


def test_a_load_that_names_a_key_twice_keeps_its_last_row_in_its_own_place() -> None:
    key, other = MemoryKey.server("g", "a", None), MemoryKey.server("g", "b", None)
    first, between, last = record(key, 10, 1), record(other, 20, 1), record(key, 30, 2)
    view = MemoryView([first, between, last])
    assert [r.key for r in view.newest_first()] == [key, other]
    assert view.records[key] is last and in_order(view)
    view.forget_row(key)
    assert view.oldest_first() == [between] and in_order(view)
