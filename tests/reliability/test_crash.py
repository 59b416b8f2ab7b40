"""A writing process killed with SIGKILL at random moments loses nothing it acknowledged.

A child process (``tests.reliability.crash_writer``) runs a deterministic
sequence of turns (captures, tool calls, settings changes; guild and DM) and
prints ``ack I`` after each one returned. The test kills it at a random
moment (during start-up and schema checks, between writes, in the middle of
one), then:

* on SQLite, ``PRAGMA integrity_check`` says ``ok``;
* the database holds exactly the state after the last acknowledged operation,
  or after the one in flight (it may have committed before the kill): an
  in-memory oracle replays the same operations to know which;
* the contexts built from the database equal the oracle's, for every user in
  every place;

and starts a new child that continues where the database stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sqlite3
from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.settings import Settings
from stm_core.store import Stm, open_store

from .crash_ops import apply, at, contexts, snapshot
from .support import add_figure, child_command, child_env, scaled


async def run_and_kill(url: str, first: int, rng: random.Random) -> int:
    """Start a writer at operation ``first``, kill it at a random moment;
    the last acknowledged operation (``first - 1`` if none)."""
    proc = await asyncio.create_subprocess_exec(
        *child_command("crash_writer", url, str(first)), env=child_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    last = first - 1
    target = rng.choice((-1, 0, 0, 1, 2, 3, 5, 8, 13))  # -1: during start-up
    try:
        if target == -1:
            await asyncio.sleep(rng.uniform(0.0, 0.6))
        else:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line == b"ready\n", line + await proc.stderr.read()  # type: ignore[union-attr]
            while last < first + target - 1:
                line = await asyncio.wait_for(proc.stdout.readline(), 60)
                assert line.startswith(b"ack "), line + await proc.stderr.read()  # type: ignore[union-attr]
                last = int(line.split()[1])
            await asyncio.sleep(rng.uniform(0.0, 0.003))
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    # Acks written just before the kill still count: they were printed.
    rest = await proc.stdout.read()
    for line in rest.splitlines():
        if line.startswith(b"ack "):
            last = int(line.split()[1])
    return last


async def advance_oracle(oracle: Stm, clock: ManualClock, done: int, upto: int) -> int:
    for i in range(done + 1, upto + 1):
        await apply(oracle, clock, i)
    return upto


async def check_after_kill(url: str, oracle: Stm, oracle_clock: ManualClock, done: int,
                           acked: int) -> int:
    """The database is at ``acked`` or ``acked + 1``; returns which."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1]
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            conn.close()
    clock = ManualClock(at(acked))
    async with open_store(url, settings=Settings(), clock=clock,
                          load_entrypoints=False) as stm:
        stored = await snapshot(stm)
        done = await advance_oracle(oracle, oracle_clock, done, acked)
        if stored != await snapshot(oracle):
            # The operation in flight committed before the kill.
            done = await advance_oracle(oracle, oracle_clock, done, acked + 1)
            assert stored == await snapshot(oracle), f"state after the kill at {acked} is " \
                                                     f"neither operation {acked} nor {acked + 1}"
        assert await contexts(stm, clock, done) == await contexts(
            oracle, oracle_clock, done)
    return done


async def test_sigkill_at_random_moments_loses_no_acknowledged_write(
        db_url: str, figures: dict[str, Any]) -> None:
    kills = scaled(ci=20, full=120)
    rng = random.Random(20260101)
    backend = "sqlite" if db_url.startswith("sqlite") else "postgres"
    oracle_clock = ManualClock(at(0))
    async with open_store(db_url, load_entrypoints=False):
        pass  # the schema exists before the first kill
    async with open_store("memory://", settings=Settings(), clock=oracle_clock,
                          load_entrypoints=False) as oracle:
        done = -1
        for _ in range(kills):
            acked = await run_and_kill(db_url, done + 1, rng)
            assert acked >= done
            done = await check_after_kill(db_url, oracle, oracle_clock, done, acked)
    assert done > kills  # the writers made progress
    add_figure(figures, f"sigkills_survived_{backend}", kills)
    add_figure(figures, f"crash_operations_{backend}", done + 1)
