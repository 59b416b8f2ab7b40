"""A store of its own process for the staleness-promise tests
(``test_listener_promise.py``): ``python -m tests.reliability.promise_worker URL``.

Settings come from the environment (``STM_DB_TIMEOUT_SECONDS``,
``STM_LISTENER_CHECK_SECONDS``, ...). Commands, one JSON line each on stdin
(see :mod:`.worker_io`); wall-clock times are ``time.time()``:

* ``{"op": "record", "server": S, "channel": C, "times": N, "every_s": T}``:
  starts N turns there, one every T seconds, without waiting for them
  (answers ``recording``); ``recorded`` follows when all ended, with
  ``errors`` (the text of each that raised);
* ``{"op": "watch", "server": S, "channel": C, "word": W, "shown": B}``:
  builds the context of a turn in channel C until W shows in it (``shown``
  true) or no longer does; answers ``watching`` once started, then
  ``watched`` with the time of the first build that showed it;
* ``{"op": "bypass", "server": S, "on": B}``: sets the server's privacy
  bypass; answers ``bypass_set`` with ``t0``, the time just before the call;
* ``{"op": "clear_user", "user": U}``: starts ``admin.clear_user`` (answers
  ``clearing``); ``cleared`` follows with the rows deleted (``None`` and
  the ``error`` when it raised) and the time it took;
* ``{"op": "watch_losses"}``: answers ``watching``, then ``lost`` with the
  time the listener first counted a lost connection after the command;
* ``{"op": "backends"}``: the server pids of the store's connections (its
  pool's and the listening one), answered as ``backends``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.store import Stm, open_store

from .worker_io import commands, say

#: Pause between two builds while watching.
POLL_S = 0.002


def turn(server: str, channel: str) -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=server, has_tools=True)


async def one_turn(stm: Stm, server: str, channel: str) -> None:
    await stm.record_turn(turn(server, channel),
                          [HistoryMessage(author_type="user", content="hi", speaker_name="u1",
                                          author_id="u1")],
                          [PersonaResponse(persona_id="p", persona_name="P", content="ok")])


async def record(stm: Stm, server: str, channel: str, times: int, every_s: float) -> None:
    started: list[asyncio.Task[None]] = []
    for _ in range(times):
        started.append(asyncio.ensure_future(one_turn(stm, server, channel)))
        await asyncio.sleep(every_s)
    results = await asyncio.gather(*started, return_exceptions=True)
    say(event="recorded", errors=[str(r) for r in results if isinstance(r, BaseException)])


async def watch(stm: Stm, server: str, channel: str, word: str, shown: bool) -> None:
    probe = turn(server, channel)
    while (word in repr(await stm.build_context(probe))) != shown:
        await asyncio.sleep(POLL_S)
    say(event="watched", t=time.time())


async def clear_user(stm: Stm, user: str) -> None:
    t0 = time.time()
    try:
        result = await stm.admin.clear_user(user)
    except Exception as exc:
        say(event="cleared", removed=None, error=str(exc), seconds=time.time() - t0)
    else:
        say(event="cleared", removed=result.removed, seconds=time.time() - t0)


async def watch_losses(stm: Stm) -> None:
    assert stm.listener is not None
    before = stm.listener.stats.connection_losses
    while stm.listener.stats.connection_losses == before:
        await asyncio.sleep(POLL_S)
    say(event="lost", t=time.time())


def backends(stm: Stm) -> list[int]:
    adapter: Any = stm.adapter
    # asyncpg has no public list of a pool's connections.
    pids = [h._con.get_server_pid() for h in adapter._pool._holders
            if h._con is not None and not h._con.is_closed()]
    subscription: Any = stm.listener.subscription if stm.listener is not None else None
    if subscription is not None:
        pids.append(subscription.backend_pid)
    return pids


async def main(url: str) -> None:
    async with open_store(url, settings=Settings.from_env(), load_entrypoints=False) as stm:
        assert stm.listener is not None
        await stm.listener.wait_connected(10)
        say(event="ready")
        tasks: set[asyncio.Task[None]] = set()

        def background(job: Any, answer: str) -> None:
            task = asyncio.ensure_future(job)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            say(event=answer)

        async for cmd in commands():
            op = cmd["op"]
            if op == "record":
                background(record(stm, cmd["server"], cmd["channel"], cmd["times"],
                                  cmd["every_s"]), "recording")
            elif op == "watch":
                background(watch(stm, cmd["server"], cmd["channel"], cmd["word"],
                                 cmd["shown"]), "watching")
            elif op == "bypass":
                t0 = time.time()
                await stm.admin.set_privacy_bypass(cmd["server"], bypass=cmd["on"])
                say(event="bypass_set", t0=t0)
            elif op == "clear_user":
                background(clear_user(stm, cmd["user"]), "clearing")
            elif op == "watch_losses":
                background(watch_losses(stm), "watching")
            elif op == "backends":
                say(event="backends", pids=backends(stm))
        for task in tasks:
            task.cancel()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
