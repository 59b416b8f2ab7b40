"""One bot process of a multi-process test: ``python -m tests.reliability.shard URL``.

It opens a store on the shared database and obeys JSON commands, one per line
on stdin, answering one JSON line each on stdout:

* ``{"op": "warm", "server": S, "channel": C}``: build a context (fills the cache);
* ``{"op": "write", "server": S, "channel": C, "text": T}``: a summary write;
  answers the wall-clock time just before the write started (``t0``);
* ``{"op": "watch", "server": S, "channel": C, "last": N}``: poll
  ``build_context`` of a turn in channel C and report each newer ``<vI>``
  marker seen in the other-channel memory, with the time it was first seen;
  ends after marker N;
* ``{"op": "hammer", ...}``: many concurrent turns on one channel, or one
  after another with ``"sequential": true`` (see :func:`hammer`);
* ``{"op": "listener"}``: the listening connection's backend pid and stats;
* ``{"op": "quit"}``.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from typing import Any

import attrs

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm, open_store

from .worker_io import commands, say

MARKER = re.compile(r"<v(\d+)>")


def turn(server: str, channel: str, **kw: Any) -> Turn:
    return Turn(user_id=kw.pop("user_id", "reader"), channel_id=channel, server_id=server,
                has_tools=kw.pop("has_tools", False), **kw)


async def watch(stm: Stm, server: str, channel: str, last: int) -> None:
    seen = -1
    probe = turn(server, channel)
    deadline = time.monotonic() + 60
    while seen < last and time.monotonic() < deadline:
        ctx = await stm.build_context(probe)
        text = ctx.memory_items[0].text if ctx.memory_items else ""
        found = [int(m) for m in MARKER.findall(text)]
        if found and max(found) > seen:
            now = time.time()
            seen = max(found)
            say(event="seen", marker=seen, t=now)
        await asyncio.sleep(0.0005)
    say(event="watch_done", marker=seen)


async def hammer(stm: Stm, server: str, channel: str, writers: int, tag: str,
                 sequential: bool = False) -> dict[str, Any]:
    """``writers`` concurrent turns on one channel (``sequential``: one after
    another, so on SQLite each write may run inline and meets the other
    processes' write locks alone). Each records a turn on the shared persona
    row (its counter must count every one exactly once) and applies a tool
    call as a persona of its own (every one must persist). SQLite's writer
    statistics come back too (``writer``)."""

    async def one(i: int) -> tuple[int, bool, str]:
        history = [HistoryMessage(author_type="user", content=f"hello {tag}-{i}",
                                  speaker_name="u")]
        shared = Turn(user_id=f"user-{tag}-{i}", channel_id=channel, server_id=server,
                      persona_id="shared", has_tools=True)
        recorded = await stm.record_turn(shared, history, [PersonaResponse(
            persona_id="shared", persona_name="Shared", content=f"reply {tag}-{i}")])
        own = Turn(user_id=f"user-{tag}-{i}", channel_id=channel, server_id=server,
                   persona_id=f"w-{tag}-{i}", has_tools=True)
        result = await stm.apply_tool_call(own, {"summary": f"note {tag}-{i}"})
        return recorded.counters["shared"], result.ok, result.message

    results: list[tuple[int, bool, str] | BaseException]
    if sequential:
        results = []
        for i in range(writers):
            try:
                results.append(await one(i))
            except Exception as exc:
                results.append(exc)
    else:
        results = await asyncio.gather(*(one(i) for i in range(writers)),
                                       return_exceptions=True)
    errors = [repr(r) for r in results if isinstance(r, BaseException)]
    done = [r for r in results if not isinstance(r, BaseException)]
    writer = getattr(stm.adapter, "writer", None)
    return {"counters": [c for c, _ok, _m in done],
            "tool_failures": [m for _c, ok, m in done if not ok], "errors": errors,
            "writer": attrs.asdict(writer.stats) if writer is not None else None}


async def main(url: str) -> None:
    settings = attrs.evolve(Settings.from_env(), listener_check_seconds=1.0)
    async with open_store(url, settings=settings, load_entrypoints=False) as stm:
        if stm.listener is not None:
            await stm.listener.wait_connected(10)
        say(event="ready")
        loop = asyncio.get_running_loop()
        tasks: set[asyncio.Task[None]] = set()
        async for cmd in commands():
            op = cmd["op"]
            if op == "warm":
                await stm.build_context(turn(cmd["server"], cmd["channel"]))
                say(event="warm")
            elif op == "write":
                key = MemoryKey.server(cmd["server"], cmd["channel"], None)
                t0 = time.time()
                await stm.engine.write_memory([MemoryWrite(key=key, now_ms=stm.clock.now_ms(),
                                                    set_summary=True, summary=cmd["text"])])
                say(event="wrote", t0=t0)
            elif op == "watch":
                task = loop.create_task(watch(stm, cmd["server"], cmd["channel"], cmd["last"]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif op == "hammer":
                say(event="hammered", **await hammer(stm, cmd["server"], cmd["channel"],
                                                     cmd["writers"], cmd["tag"],
                                                     cmd.get("sequential", False)))
            elif op == "listener":
                listener = stm.listener
                subscription = listener.subscription if listener is not None else None
                say(event="listener", pid=getattr(subscription, "backend_pid", None),
                    stats=attrs.asdict(listener.stats) if listener is not None else None)
        for task in tasks:
            task.cancel()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
