"""Forgetting a user while other processes write, and when killed half-way,
on a SQLite file and on PostgreSQL.

* Writers: bot processes (``tests.reliability.forget_writer``) record turns of
  their own users in the channels where the forgotten user's lines are stored,
  while this process forgets the user. Afterwards nothing of the user is
  stored or shown, and every row holds exactly the last window a writer wrote
  there (a forget that overwrote a newer capture would leave an old window),
  with every turn counted.
* Crash: a process forgetting the user is killed at a random moment. Every
  row is whole (all of the user's lines or none of them, every other line
  kept), and running forget again finishes the job.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

import pytest

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.records import MemoryFilter, MemoryRecord
from stm_core.store import Stm, open_store

from .support import child_command, child_env, scaled

X, Y = "4242", "5151"
SERVER = "G"
CHANNELS = 12
WRITERS = 3
TURNS = scaled(ci=40, full=400)
OWN = "own"  # the channel of X's own turn (X's copy, and the server row)
NAME = "Xena"  # X's display name


async def say(stm: Stm, user: str, channel: str, lines: list[tuple[str, str]]) -> None:
    history = [HistoryMessage(author_type="user", content=text, author_id=author,
                              speaker_name=NAME if author == X else author)
               for author, text in lines]
    await stm.record_turn(Turn(user_id=user, channel_id=channel, server_id=SERVER,
                               persona_id="p"),
                          history, [PersonaResponse(content="re seed", persona_name="Bot",
                                                    persona_id="p")])


async def seed(url: str, channels: int) -> None:
    """Y's turns carry X's lines into every channel's row and Y's copies; X has a
    row. The model's summary of every channel names X (the row and Y's copy,
    each with a kept revision)."""
    async with open_store(url, load_entrypoints=False) as stm:
        for c in range(channels):
            await say(stm, Y, f"c{c}", [(X, f"x-secret-{c}"), (Y, f"y-{c}")])
            result = await stm.apply_tool_call(
                Turn(user_id=Y, channel_id=f"c{c}", server_id=SERVER, persona_id="p",
                     provider="openai"), {"summary": f"{NAME} likes c{c}"})
            assert result.ok, result
        await say(stm, X, OWN, [(X, "x-secret-own")])


async def naming_x(stm: Stm) -> list[str]:
    """Summaries, category texts and kept revisions that still name X."""
    found = []
    for record in await all_rows(stm):
        kept = await stm.adapter.list_revisions(record.key)  # type: ignore[attr-defined]
        found += [text for text in (record.summary, *record.categories.values(),
                                    *(r.summary for r in kept))
                  if text and NAME in text]
    return found


async def all_rows(stm: Stm) -> list[MemoryRecord]:
    return await stm.adapter.list_memories(MemoryFilter(server_id=SERVER))


def texts(record: MemoryRecord) -> list[str]:
    return [m.content for m in record.messages]


async def start_writer(url: str, tag: str, ids: str = "all") -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *child_command("forget_writer", url, tag, str(TURNS), str(CHANNELS), ids),
        env=child_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


async def expect(proc: asyncio.subprocess.Process, event: str) -> dict[str, Any]:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 120)
    if not line:
        assert proc.stderr is not None
        raise AssertionError(f"writer exited: {(await proc.stderr.read()).decode()[-3000:]}")
    answer: dict[str, Any] = json.loads(line)
    assert answer["event"] == event, answer
    return answer


@pytest.mark.parametrize("ids", ["all", "trigger", "tool"])
async def test_forget_while_other_processes_record_turns(db_url: str, ids: str) -> None:
    """``ids="trigger"``: the writers' hosts pass no author id for the
    triggering message; stm's own attribution must hold under the race too.
    ``ids="tool"``: the writers' models also rewrite the summaries that name
    X, racing the forget that clears them."""
    await seed(db_url, CHANNELS)
    writers = [await start_writer(db_url, f"w{i}", ids) for i in range(WRITERS)]
    try:
        for proc in writers:
            assert (await expect(proc, "warm"))["showed_forgotten"]
        async with open_store(db_url, load_entrypoints=False) as stm:
            for proc in writers:
                assert proc.stdin is not None
                proc.stdin.write(b"go\n")
            result = await stm.admin.forget_user(X)
            done = [await expect(proc, "done") for proc in writers]
            assert result.lines_removed > 0 and result.rows_removed
            # The rows and Y's copies; a writer's summaries may have pushed the
            # revisions naming X out of a row's kept history before forget came.
            cleared = len(result.memories_cleared)
            assert cleared == 2 * CHANNELS or (ids == "tool" and cleared >= CHANNELS)
            assert await naming_x(stm) == []

            windows: dict[str, list[list[str]]] = {}
            for answer in done:
                for channel, written in answer["windows"].items():
                    windows.setdefault(channel, []).extend(written)
            rows = await all_rows(stm)
            assert not [m for r in rows for m in r.messages
                        if m.author_id == X or "x-secret" in m.content]
            assert not [r for r in rows if r.key.user_id == X]
            assert not [m for r in rows for m in r.messages
                        if m.role == "user" and m.author_id is None]
            assert result.unchecked_lines == 0
            for record in rows:
                channel = record.key.channel_id
                if record.key.scope_kind == "user":
                    assert record.key.user_id != Y or texts(record) == [f"y-{channel[1:]}",
                                                                       "re seed"]
                    continue
                written = windows.get(channel, [])
                if channel == OWN:
                    assert texts(record) == ["re seed"]
                elif written:  # the last writer's window, whole
                    assert texts(record) in written, (channel, texts(record))
                else:
                    assert texts(record) == [f"y-{channel[1:]}", "re seed"]
                if ids == "tool":  # the writers' tool calls reset the counters
                    assert record.summary is None or record.summary.endswith(" notes")
                    continue
                # Every turn counted (the seed's tool call reset the seeded channels).
                assert record.turns_since_refresh == len(written) + (channel == OWN)
            if db_url.startswith("postgresql"):
                # Their warm caches followed the changes (LISTEN/NOTIFY).
                for proc in writers:
                    assert proc.stdin is not None
                    proc.stdin.write(b"check\n")
                    assert (await expect(proc, "seen"))["found"] is False
    finally:
        for proc in writers:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


FORGETTER = """
import asyncio, sys
from stm_core.store import open_store

async def main():
    async with open_store(sys.argv[1], load_entrypoints=False) as stm:
        print("ready", flush=True)
        await stm.admin.forget_user(sys.argv[2])
        print("finished", flush=True)

asyncio.run(main())
"""


async def test_a_killed_forget_leaves_whole_rows_and_finishes_when_run_again(
        db_url: str) -> None:
    channels = scaled(ci=60, full=300)
    await seed(db_url, channels)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FORGETTER, db_url, X, env=child_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
    await asyncio.sleep(random.uniform(0.0, 0.15))
    proc.kill()
    await proc.wait()

    async with open_store(db_url, load_entrypoints=False) as stm:
        for record in await all_rows(stm):
            channel = record.key.channel_id[1:]
            if record.key.user_id == X:
                assert texts(record) == ["x-secret-own", "re seed"]  # deleted whole or not
            elif record.key.channel_id == OWN:
                assert texts(record) in (["x-secret-own", "re seed"], ["re seed"])
            else:
                # All of X's lines or none of them; Y's line and the reply always kept.
                assert texts(record) in ([f"x-secret-{channel}", f"y-{channel}", "re seed"],
                                         [f"y-{channel}", "re seed"])
            # Cleared with its lines in one transaction, or not at all.
            named = bool(record.summary and NAME in record.summary)
            assert named == (f"x-secret-{channel}" in texts(record)) or record.key.channel_id == OWN
        await stm.admin.forget_user(X)  # finds X's name again: their lines are not all gone
        assert await naming_x(stm) == []
        rows = await all_rows(stm)
        assert len(rows) == 2 * channels + 1  # X's own copy went
        assert not [m for r in rows for m in r.messages if m.author_id == X]
        assert all(texts(r)[0].startswith("y-") for r in rows if r.key.channel_id != OWN)
