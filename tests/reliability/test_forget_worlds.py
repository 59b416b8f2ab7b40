"""Forgetting, as a property over generated worlds.

A world is servers with channels (some private), DMs, users who opt in or
not, and a history of turns: each turn is recorded with a window of lines by
several users (their author ids kept), some turns also write a summary. After
``forget_user(u0)``, for every user in every place and persona:

* no build shows a word of u0;
* a build of anyone else shows every word of the others it showed before
  (taking u0's lines out never hides anyone else's).

The memory backend and a manual clock keep each world fast and its texts
comparable; :mod:`.test_forget_under_load` covers SQLite and PostgreSQL under
concurrent writers.
"""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import Stm, open_store

from .support import scaled

USERS = ("u0", "u1", "u2")
FORGOTTEN = "u0"
PERSONAS = ("p0", "p1")
WORD = re.compile(r"\b(u\d)w\d+\b")
LOOP = asyncio.new_event_loop()
T0 = 1_767_225_600_000


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, object]:
    servers = {f"s{i}": [f"s{i}c{j}" for j in range(draw(st.integers(1, 3)))]
               for i in range(draw(st.integers(1, 2)))}
    private = {s: [c for c in chans if draw(st.booleans()) and len(chans) > 1]
               for s, chans in servers.items()}
    places = [(s, c) for s, chans in servers.items() for c in chans]
    places += [(None, f"dm-{u}") for u in USERS]
    opt_in = {u: draw(st.booleans()) for u in USERS}
    turns = []
    for n in range(draw(st.integers(1, 14))):
        user = draw(st.sampled_from(USERS))
        server, channel = draw(st.sampled_from(places))
        if server is None:
            channel = f"dm-{user}"
            authors = [user]
        else:
            authors = draw(st.lists(st.sampled_from(USERS), min_size=1, max_size=4))
        lines = [(a, f"{a}w{n}{k}") for k, a in enumerate(authors)]
        summary = f"summary {n}" if draw(st.integers(0, 3)) == 0 else None
        turns.append((user, server, channel, draw(st.sampled_from(PERSONAS)), lines, summary))
    return {"servers": servers, "private": private, "places": places, "opt_in": opt_in,
            "turns": turns}


async def build_all(stm: Stm, world: dict[str, object]) -> dict[tuple[str, ...], set[str]]:
    """Words shown by every build: each user in each place with each persona."""
    shown: dict[tuple[str, ...], set[str]] = {}
    for user in USERS:
        for server, channel in world["places"]:  # type: ignore[attr-defined]
            if server is None and channel != f"dm-{user}":
                continue
            for persona in PERSONAS:
                ctx = await stm.build_context(Turn(user_id=user, channel_id=channel,
                                                   server_id=server, persona_id=persona,
                                                   has_tools=False))
                text = "\n".join(i.text for i in ctx.memory_items)
                shown[(user, str(server), channel, persona)] = {
                    m.group(0) for m in WORD.finditer(text)}
    return shown


async def check_world(world: dict[str, object]) -> bool:
    """Check the properties; whether any build showed u0's words before."""
    clock = ManualClock(T0)
    async with open_store("memory://", load_entrypoints=False, clock=clock) as stm:
        for server, chans in world["private"].items():  # type: ignore[attr-defined]
            if chans:
                await stm.admin.set_private_channels(server, channel_ids=chans)
        for user, on in world["opt_in"].items():  # type: ignore[attr-defined]
            await stm.admin.set_user_opt_in(user, opt_in=on)
        for user, server, channel, persona, lines, summary in world["turns"]:  # type: ignore[attr-defined]
            clock.advance(minutes=1)
            turn = Turn(user_id=user, channel_id=channel, server_id=server,
                        persona_id=persona, has_tools=True)
            if summary is not None:
                await stm.apply_tool_call(turn, {"summary": summary})
            history = [HistoryMessage(author_type="user", content=text, author_id=author,
                                      speaker_name=author) for author, text in lines]
            await stm.record_turn(turn, history, [PersonaResponse(
                content="ok", persona_name="Bot", persona_id=persona)])
        clock.advance(minutes=1)
        before = await build_all(stm, world)
        await stm.admin.forget_user(FORGOTTEN)
        after = await build_all(stm, world)
    for place, words in after.items():
        assert not {w for w in words if w.startswith(FORGOTTEN)}, (place, words)
        if place[0] != FORGOTTEN:
            kept = {w for w in before[place] if not w.startswith(FORGOTTEN)}
            assert kept <= words, (place, kept - words)
    return any(w.startswith(FORGOTTEN) for words in before.values() for w in words)


@settings(max_examples=scaled(ci=150, full=3000), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_no_build_shows_a_forgotten_user_and_nobody_else_loses_anything(
        world: dict[str, object]) -> None:
    LOOP.run_until_complete(check_world(world))


def test_a_known_world_shows_the_user_before_and_not_after() -> None:
    """The property test is not vacuous: here u0's words do show before."""
    world = {"servers": {"s0": ["s0c0", "s0c1"]}, "private": {"s0": []},
             "places": [("s0", "s0c0"), ("s0", "s0c1"), (None, "dm-u0")],
             "opt_in": {"u0": True, "u1": True, "u2": False},
             "turns": [("u1", "s0", "s0c0", "p0", [("u0", "u0w00"), ("u1", "u1w01")], None),
                       ("u0", None, "dm-u0", "p0", [("u0", "u0w10")], "summary 1")]}
    assert LOOP.run_until_complete(check_world(world))
