"""A long-lived store answers exactly as a store freshly opened on the same
database at the same clock time (DESIGN decision 19).

Generated sequences of turns, tool calls, every admin mutation, the janitor,
undo/restore/forget, clock moves onto every TTL, freshness and retention
boundary and back, and another store on the same database deleting and
rewriting a channel's rows (heard at once afterwards, as a busy loop hears
it), some steps run concurrently with ``asyncio.gather``, run against one
store that stays open. After each step a second store is opened on the same
SQLite file with the same clock, and every probe turn of the world
(:mod:`.warm_cold`) must get the same ``build_context``, ``tool_schema`` and
``tool_available`` from both. A variant runs with caches so small that every
step evicts, and one whose views drop rows (builds walk the rows kept per
lineage). The PostgreSQL variant writes from a second process and compares
once its change notices have arrived.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.settings import Settings
from stm_core.store import open_store
from tests.conftest import asyncpg_dsn, postgres_base_url, with_schema

from . import warm_cold
from .support import child_env, scaled
from .warm_cold import (
    BOUNDED_VIEW_SETTINGS,
    SETTINGS,
    SMALL_CACHE_SETTINGS,
    describe,
    probe,
    run_step,
    steps,
)


async def _fresh_probe(url: str, clock: ManualClock, stm_settings: Settings) -> list[object]:
    async with open_store(url, clock=ManualClock(clock.now_ms()), settings=stm_settings,
                          load_entrypoints=False, listen_for_changes=False) as cold:
        return await probe(cold)


async def _warm_equals_cold(url: str, program: list[list[warm_cold.Op]],
                            stm_settings: Settings) -> None:
    clock = ManualClock()
    async with open_store(url, clock=clock, settings=stm_settings,
                          load_entrypoints=False) as warm, \
            open_store(url, clock=clock, settings=stm_settings, load_entrypoints=False,
                       listen_for_changes=False) as other:
        warm_cold.OTHERS[warm] = other
        try:
            await probe(warm)  # every view cached before the first change
            done: list[str] = []
            for step in program:
                await run_step(warm, clock, step)
                done.append(describe(step))
                warm_answer = await probe(warm)
                cold_answer = await _fresh_probe(url, clock, stm_settings)
                _assert_same(warm_answer, cold_answer, done)
        finally:
            del warm_cold.OTHERS[warm]


def _assert_same(warm: list[object], cold: list[object], done: list[str]) -> None:
    for place, (w, c) in enumerate(zip(warm, cold, strict=True)):
        if w != c:
            turn = warm_cold.probe_turns()[place]
            raise AssertionError(
                f"the long-lived store differs from a fresh one for {turn!r}\n"
                f"after: {done}\nwarm: {w!r}\ncold: {c!r}")


@pytest.mark.parametrize("stm_settings", [SETTINGS, SMALL_CACHE_SETTINGS, BOUNDED_VIEW_SETTINGS],
                         ids=["default-cache", "tiny-cache", "bounded-views"])
def test_a_long_lived_sqlite_store_answers_as_a_fresh_one(stm_settings: Settings) -> None:
    @settings(max_examples=scaled(100, 1000), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(program=st.lists(steps, min_size=1, max_size=8))
    def check(program: list[list[warm_cold.Op]]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite+aiosqlite:///{Path(folder) / 'stm.db'}"
            asyncio.run(_warm_equals_cold(url, program, stm_settings))

    check()


@pytest.mark.postgres
def test_a_long_lived_postgres_store_answers_as_a_fresh_one() -> None:
    """The same on PostgreSQL, each example on a schema of its own."""
    base = postgres_base_url()
    if base is None:
        pytest.skip("PostgreSQL tests need STM_TEST_POSTGRES_URL")

    async def on_new_schema(program: list[list[warm_cold.Op]]) -> None:
        import asyncpg

        schema = "stm_wc_" + uuid.uuid4().hex[:12]
        conn = await asyncpg.connect(asyncpg_dsn(base))
        try:
            await _warm_equals_cold(with_schema(base, schema), program, SETTINGS)
        finally:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            await conn.close()

    @settings(max_examples=scaled(8, 100), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(program=st.lists(steps, min_size=1, max_size=6))
    def check(program: list[list[warm_cold.Op]]) -> None:
        asyncio.run(on_new_schema(program))

    check()


RACING_ADMIN_CALLS = [
    ("reset_categories", {"server_id": "g1"}),
    ("set_categories", {"server_id": "g1", "lines": ["mood: how it feels"]}),
    ("clear_channel", {"channel_id": "c1"}),
]


@pytest.mark.parametrize("admin_first", [True, False], ids=["admin-first", "turn-first"])
@pytest.mark.parametrize(("call", "kwargs"), RACING_ADMIN_CALLS,
                         ids=[name for name, _ in RACING_ADMIN_CALLS])
async def test_an_admin_delete_racing_a_turn_keeps_the_turns_row(
        tmp_path: Path, call: str, kwargs: dict[str, object], admin_first: bool) -> None:
    """An admin call that deletes a server's rows, gathered with a turn that
    rewrites one of them: whatever order they commit in, the long-lived store
    must show what a fresh store shows (the removal must not drop the row the
    turn committed after it)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'stm.db'}"
    clock = ManualClock()
    async with open_store(url, clock=clock, settings=SETTINGS, load_entrypoints=False) as warm:
        for channel in ("c1", "c2"):
            await warm_cold.record_op(("g1", channel, 0, "u1"), "before")(warm, clock)
        await probe(warm)
        clock.advance(ms=1)
        turn = warm_cold.record_op(("g1", "c1", 0, "u1"), "after")
        admin = warm_cold.admin_op(call, **kwargs)
        ops = [admin, turn] if admin_first else [turn, admin]
        await asyncio.gather(*(op(warm, clock) for op in ops))
        _assert_same(await probe(warm), await _fresh_probe(url, clock, SETTINGS),
                     [describe(ops)])


# -- PostgreSQL: another process writes; equal once its notices arrived ----------------

WRITER = """
import asyncio, json, sys
from stm_core._util.clock import ManualClock
from stm_core.store import open_store
from tests.reliability import warm_cold

async def main():
    url, now = sys.argv[1], int(sys.argv[2])
    seed = json.loads(sys.argv[3])
    clock = ManualClock(now)
    async with open_store(url, clock=clock, settings=warm_cold.SETTINGS,
                          load_entrypoints=False, listen_for_changes=False) as stm:
        for kind, args in seed:
            args = [tuple(a) if isinstance(a, list) else a for a in args]
            op = getattr(warm_cold, kind)(*args)
            await op(stm, clock)

asyncio.run(main())
"""

#: Operations the second process runs, as (factory in warm_cold, arguments).
REMOTE_PROGRAMS = [
    [("record_op", [["g1", "c1", 0, "u1"], "teal sky"]),
     ("tool_op", [["g1", "c2", 1, "u2"], "red sea", False])],
    [("record_op", [["g1", "c3", 0, "u2"], "same"])],
    [("tool_op", [["g2", "c1", 0, "u1"], "a b c", True]),
     ("record_op", [[None, "c1", 1, "u1"], "dm line"])],
]


def _run_writer(url: str, now_ms: int, program: list[tuple[str, list[object]]]) -> None:
    subprocess.run([sys.executable, "-c", WRITER, url, str(now_ms), json.dumps(program)],
                   check=True, env=child_env(), timeout=120)


async def _remote_writes_reach_the_warm_store(url: str) -> None:
    clock = ManualClock()
    async with open_store(url, clock=clock, settings=SETTINGS,
                          load_entrypoints=False) as warm:
        assert warm.listener is not None, "the PostgreSQL store does not listen"
        before = await probe(warm)
        loop = asyncio.get_running_loop()
        for program in REMOTE_PROGRAMS:
            await loop.run_in_executor(None, _run_writer, url, clock.now_ms(), program)
            # Within the staleness bound: the notices of a committed write arrive
            # in well under the bound (docs/deployment.md); poll until they did.
            cold = await _fresh_probe(url, clock, SETTINGS)
            deadline = loop.time() + SETTINGS.unheard_cache_max_age_seconds
            while (warm_answer := await probe(warm)) != cold and loop.time() < deadline:
                await asyncio.sleep(0.05)
            _assert_same(warm_answer, cold, [str(program)])
            assert cold != before, f"the other process's writes changed nothing: {program}"
            before = cold
            clock.advance(ms=SETTINGS.crude_ttl_ms // 2)


@pytest.mark.postgres
async def test_a_long_lived_postgres_store_follows_another_process(pg_url: str) -> None:
    await _remote_writes_reach_the_warm_store(pg_url)


def test_the_probe_covers_every_kind_of_place() -> None:
    turns = warm_cold.probe_turns()
    assert any(t.server_id is None for t in turns)
    assert any(t.parent_channel_id for t in turns)
    assert {t.persona_lineage_id for t in turns} == {"lin1", "lin2"}
    assert {t.provider for t in turns} >= set(warm_cold.PROVIDERS)
