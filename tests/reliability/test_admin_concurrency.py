"""Every admin mutator from several processes and many tasks at once loses
no acknowledged update: the final state equals some serial order of the
acknowledged calls (see :mod:`.admin_ops`). ``memory://`` runs the same
calls as several concurrent drivers in one process.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from stm_core.store import open_store

from .admin_ops import drive, lost_updates, merge, seed
from .support import add_figure, child_command, child_env, scaled

PROCESSES = 4


async def run_workers(url: str, tags: list[str], n: int) -> list[dict[str, Any]]:
    procs = [await asyncio.create_subprocess_exec(
        # Hundreds of calls at once per process on a pool of ten connections:
        # waiting for a connection may take longer than the default timeout on
        # a busy machine, which is not what this test is about.
        *child_command("admin_worker", url, tag, str(n)),
        env=child_env(STM_DB_TIMEOUT_SECONDS="120"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=2**24) for tag in tags]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line == b"ready\n", line + await proc.stderr.read()  # type: ignore[union-attr]
        for proc in procs:  # all go at once
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
        reports = []
        for proc in procs:
            out, err = await asyncio.wait_for(proc.communicate(), 300)
            assert proc.returncode == 0, err.decode()[-3000:]
            reports.append(json.loads(out))
        return reports
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_every_admin_mutator_from_several_processes_loses_nothing(
        db_url: str, figures: dict[str, Any]) -> None:
    n = scaled(12, 30)
    tags = [f"w{k}" for k in range(PROCESSES)]
    async with open_store(db_url, load_entrypoints=False) as stm:
        await seed(stm, tags, n)
    acks, errors = merge(await run_workers(db_url, tags, n))
    assert errors == []
    async with open_store(db_url, load_entrypoints=False) as stm:
        assert await lost_updates(stm, acks, tags, n) == []
    calls = sum(len(v) for v in acks.values())
    backend = "sqlite" if db_url.startswith("sqlite") else "postgres"
    add_figure(figures, f"admin_calls_concurrent_{backend}", calls)
    add_figure(figures, "admin_updates_lost", 0)


async def test_every_admin_mutator_in_one_process_on_memory() -> None:
    n = 12
    tags = [f"t{k}" for k in range(PROCESSES)]
    async with open_store("memory://", load_entrypoints=False) as stm:
        await seed(stm, tags, n)
        acks, errors = merge(list(await asyncio.gather(*(drive(stm, t, n) for t in tags))))
        assert errors == []
        assert await lost_updates(stm, acks, tags, n) == []
