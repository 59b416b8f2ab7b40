"""Summary history under several writing processes and under SIGKILL, on a
SQLite file and PostgreSQL: revisions are neither lost nor over the limit, and
the row and its history always agree."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey
from stm_core.store import open_store

from .history_writer import KEEP_EARLIER
from .support import child_command, child_env

KEY = MemoryKey.server("g", "c", "p")
KEPT = KEEP_EARLIER + 1


async def _writer(url: str, label: str, count: int,
                  *mode: str) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        *child_command("history_writer", url, label, str(count), *mode), env=child_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line == b"ready\n", (line, await proc.stderr.read() if proc.stderr else b"")
    return proc


async def _check_row_and_history(url: str) -> tuple[int, list[int]]:
    async with open_store(url, settings=Settings(), load_entrypoints=False) as stm:
        record = await stm.adapter.get_memory(KEY)
        assert record is not None
        revisions = await stm.admin.memory_history(server_id="g", channel_id="c",
                                                   persona_id="p")
    revs = [r.rev for r in revisions.revisions]
    assert revs == sorted(revs, reverse=True) and len(set(revs)) == len(revs)
    assert revs[0] == record.rev, "the newest revision is the row's last write"
    assert revisions.revisions[0].text == record.summary
    return record.rev, revs


async def test_concurrent_writer_processes_keep_exactly_the_newest(db_url: str) -> None:
    per_process, processes = 15, 3
    async with open_store(db_url, settings=Settings(), load_entrypoints=False):
        pass  # the schema exists before the writers race
    # One of them undoes after each of its edits: undo races edits too.
    procs = [await _writer(db_url, f"w{n}", per_process, *(("undo",) if n == 0 else ()))
             for n in range(processes)]
    committed = 0
    for proc in procs:
        out, err = await asyncio.wait_for(proc.communicate(), 300)
        assert proc.returncode == 0, err.decode()[-2000:]
        committed += out.decode().count("ack ")
    assert committed >= per_process * processes
    rev, revs = await _check_row_and_history(db_url)
    assert rev == committed, "every acknowledged write committed exactly once"
    assert revs == list(range(rev, rev - KEPT, -1)), "the newest ones, none lost, no more"


async def test_a_writer_killed_mid_stream_leaves_row_and_history_consistent(
        db_url: str) -> None:
    for round_ in range(3):
        proc = await _writer(db_url, f"k{round_}", -1)
        assert proc.stdout is not None
        for _ in range(3 + 2 * round_):
            await asyncio.wait_for(proc.stdout.readline(), 60)
        proc.send_signal(signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
        rev, revs = await _check_row_and_history(db_url)
        assert rev >= 3 + 2 * round_, "acknowledged edits were kept"
        assert revs == list(range(rev, rev - min(KEPT, rev), -1))


async def test_an_undo_in_one_store_reaches_another_stores_cache(pg_url: str) -> None:
    from stm_core.models import Turn

    from .test_invalidation import eventually, shows, two_stores

    turn = Turn(user_id="u1", channel_id="c", server_id="g", persona_id="p")
    async with two_stores(pg_url) as (a, b):
        for text in ("the bell is in the undercroft", "blah"):
            await a.admin.edit_memory(server_id="g", channel_id="c", persona_id="p",
                                      summary=text)

        async def b_sees(text: str) -> bool:
            return await shows(b, text, turn)

        await eventually(lambda: b_sees("blah"))  # B now caches the bad rewrite
        await a.admin.undo_memory(server_id="g", channel_id="c", persona_id="p")
        await eventually(lambda: b_sees("the bell is in the undercroft"))


SET_POLICY = """
import asyncio, sys
from stm_core.store import open_store

async def main(url, n):
    async with open_store(url, load_entrypoints=False) as stm:
        for i in range(10):
            policy = ("stable", "freshness")[(i + n) % 2]
            await stm.admin.set_server_params("g", cache_policy=policy,
                                              nudge_injection_depth=n)
asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


async def test_cache_policy_set_from_several_processes(db_url: str) -> None:
    import sys

    async with open_store(db_url, settings=Settings(), load_entrypoints=False) as stm:
        await stm.admin.set_server_params("g", refresh_cadence=7)
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", SET_POLICY, db_url, str(n), env=child_env(),
        stderr=asyncio.subprocess.PIPE) for n in range(3)]
    for proc in procs:
        _out, err = await asyncio.wait_for(proc.communicate(), 300)
        assert proc.returncode == 0, err.decode()[-2000:]
    async with open_store(db_url, settings=Settings(), load_entrypoints=False) as stm:
        params = await stm.admin.server_params("g")
    assert params.cache_policy in ("stable", "freshness")
    assert params.nudge_injection_depth in (0, 1, 2)
    assert params.refresh_cadence == 7, "a concurrent write of other columns kept it"
