"""The deterministic sequence of writes the crash test runs, and how state is compared.

Operation ``i`` is the same everywhere: in the child that gets killed, and in
the in-memory oracle the parent replays to know what the database must hold.
The clock is part of the operation (``T0 + i`` minutes), so expiry and
relative times agree too.
"""

from __future__ import annotations

import random
from typing import Any

from stm_core._util.clock import ManualClock
from stm_core.models import HistoryMessage, PersonaResponse, StmContext, Turn
from stm_core.storage.records import MemoryFilter
from stm_core.store import Stm

T0 = 1_767_225_600_000
SERVER = "g"
CHANNELS = ("c0", "c1", "c2", "t0")
PERSONAS = ("p0", "p1")
USERS = ("u0", "u1", "u2")


def at(i: int) -> int:
    return T0 + i * 60_000


def _turn(rng: random.Random, *, dm: bool) -> Turn:
    user = rng.choice(USERS)
    channel = rng.choice(CHANNELS)
    return Turn(user_id=user, channel_id=f"dm-{user}" if dm else channel,
                server_id=None if dm else SERVER,
                parent_channel_id="c0" if channel == "t0" and not dm else None,
                persona_id=rng.choice(PERSONAS), has_tools=True)


async def apply(stm: Stm, clock: ManualClock, i: int) -> None:
    """Operation ``i``; raises if it fails."""
    rng = random.Random(i)
    clock.set(at(i))
    kind = rng.choices(("record", "tool", "settings"), weights=(6, 3, 1))[0]
    turn = _turn(rng, dm=rng.random() < 0.2)
    if kind == "record":
        history = [HistoryMessage(author_type="user", content=f"message {i} " * rng.randint(1, 5),
                                  speaker_name=turn.user_id)]
        await stm.record_turn(turn, history, [PersonaResponse(
            persona_id=turn.persona_id, persona_name="P", content=f"reply {i}")])
    elif kind == "tool":
        result = await stm.apply_tool_call(turn, {"summary": f"summary {i}"})
        if not result.ok:
            raise RuntimeError(f"tool call {i} failed: {result.message}")
    else:
        await stm.admin.set_private_channels(SERVER, channel_ids=rng.sample(CHANNELS[:3], 1))


async def snapshot(stm: Stm) -> list[Any]:
    """Everything stored, in a comparable form (read from the database)."""
    rows = []
    for flt in (MemoryFilter(server_id=SERVER), MemoryFilter(server_id="")):
        for r in await stm.adapter.list_memories(flt):
            rows.append((r.key, r.summary, dict(r.categories), r.messages,
                         r.turns_since_refresh, r.last_refreshed_turn, r.updated_at_ms, r.rev,
                         r.parent_channel_id))
    settings = await stm.adapter.load_server_settings(SERVER)
    return [sorted(rows, key=repr), sorted(settings.private_channel_ids)]


async def contexts(stm: Stm, clock: ManualClock, i: int) -> list[StmContext]:
    """The contexts every user would get in every place, just after operation ``i``."""
    clock.set(at(i) + 1)
    built = []
    for user in USERS:
        for channel in CHANNELS:
            for persona in PERSONAS:
                built.append(await stm.build_context(Turn(
                    user_id=user, channel_id=channel, server_id=SERVER, persona_id=persona,
                    parent_channel_id="c0" if channel == "t0" else None)))
        built.append(await stm.build_context(Turn(user_id=user, channel_id=f"dm-{user}")))
    return built
