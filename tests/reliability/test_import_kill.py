"""``import_config`` is all-or-nothing: a process killed with SIGKILL in the
middle of an import leaves the configuration of one whole document (the one
before, or the one in flight), never a mix, and the server's memories are
cleared exactly when the stored categories changed.

Children forked from a warm process (:mod:`.import_forker`) import
documents that differ in every section, one after another; the test kills
each at a random moment (while opening the store, between imports, in the
middle of one) and checks the database. On PostgreSQL it first waits until
the killed child's server sessions are gone: a COMMIT sent just before the
kill still completes on the server, and the check must see its outcome.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
from typing import Any

import asyncpg

from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm, open_store
from tests.conftest import asyncpg_dsn, postgres_base_url

from .import_forker import SERVER, document
from .support import add_figure, child_command, child_env, scaled

KEEP = MemoryKey.server(SERVER, "keep", None)


class Forker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def line(self) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        assert raw, "the forker exited"
        return raw.decode().strip()

    async def run_and_kill(self, first: int, rng: random.Random) -> list[int]:
        """Fork an importer from ``first``, kill it at a random moment; its acks."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{first}\n".encode())
        target = rng.choice((-1, 0, 0, 1, 1, 2, 3))  # -1: while it opens the store
        acks: list[int] = []
        ready = False
        pid = None
        while pid is None or (target >= 0 and (not ready or len(acks) < target)):
            line = await self.line()
            if line.startswith("pid "):
                pid = int(line.split()[1])
                if target == -1:
                    await asyncio.sleep(rng.uniform(0.0, 0.05))
            elif line == "ready":
                ready = True
            elif line.startswith("ack "):
                acks.append(int(line.split()[1]))
        await asyncio.sleep(rng.uniform(0.0, 0.004))
        os.kill(pid, signal.SIGKILL)
        while (line := await self.line()) != "reaped":
            if line.startswith("ack "):  # printed before the kill: it counts
                acks.append(int(line.split()[1]))
        return acks


async def stored_document(stm: Stm) -> dict[str, Any]:
    doc = await stm.admin.export_config(SERVER)
    doc.pop("server_id")
    return doc


async def remember(stm: Stm) -> None:
    """A server memory the next import clears (its categories differ)."""
    await stm.adapter.write_memory([MemoryWrite(key=KEEP, now_ms=stm.clock.now_ms(),
                                                set_summary=True, summary="kept")])


class Sessions:
    """The killed children's PostgreSQL sessions, found by application name."""

    def __init__(self, db_url: str) -> None:
        self.app = "stm_kill_" + db_url.rsplit("schema=", 1)[1]
        self.child_url = f"{db_url}&application_name={self.app}"
        self._conn: Any = None

    async def gone(self) -> None:
        if self._conn is None:
            base = postgres_base_url()
            assert base is not None
            self._conn = await asyncpg.connect(asyncpg_dsn(base))
        deadline = asyncio.get_running_loop().time() + 30
        while await self._conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", self.app):
            assert asyncio.get_running_loop().time() < deadline, "a session outlived its client"
            await asyncio.sleep(0.005)

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()


async def test_import_config_killed_mid_way_is_all_or_nothing(
        db_url: str, figures: dict[str, Any]) -> None:
    kills = scaled(50, 200)
    rng = random.Random(9)
    sqlite_path = db_url.split("///", 1)[1] if db_url.startswith("sqlite") else None
    sessions = None if sqlite_path else Sessions(db_url)
    proc = await asyncio.create_subprocess_exec(
        *child_command("import_forker", sessions.child_url if sessions else db_url),
        env=child_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    forker = Forker(proc)
    torn: list[str] = []
    landed = 0
    try:
        async with open_store(db_url, load_entrypoints=False,
                              listen_for_changes=False) as stm:
            await stm.admin.import_config(SERVER, document(0))
            before, k = await stored_document(stm), 0
            for _ in range(kills):
                await remember(stm)
                acks = await forker.run_and_kill(k + 1, rng)
                if sessions is not None:
                    await sessions.gone()
                assert acks == list(range(k + 1, k + 1 + len(acks)))
                last = acks[-1] if acks else k
                allowed = {last: document(last) if acks else before, last + 1: document(last + 1)}
                now = await stored_document(stm)
                found = [n for n, doc in allowed.items() if doc == now]
                if not found:
                    torn.append(f"after acks {acks}: {now}")
                    break
                committed = now != before  # documents differ in every section
                kept = await stm.adapter.get_memory(KEEP) is not None
                if kept == committed:
                    torn.append(f"memory {'kept' if kept else 'cleared'} after acks {acks} "
                                f"with {'an' if committed else 'no'} import committed")
                landed += found[0] == last + 1
                k, before = found[0], now
                if sqlite_path is not None:
                    with sqlite3.connect(sqlite_path) as conn:
                        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        if sessions is not None:
            await sessions.close()
    assert torn == []
    backend = "sqlite" if sqlite_path else "postgres"
    add_figure(figures, f"import_kills_{backend}", kills)
    add_figure(figures, "imports_torn", 0)
    add_figure(figures, f"imports_in_flight_committed_{backend}", landed)
