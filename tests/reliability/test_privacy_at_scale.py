"""Privacy and scope as properties, at scale (10,000 generated worlds in CI).

Each generated world has servers with channels, threads under them, private
channels and the bypass; DMs; memories of several users and personas in
persona lineages; a user's cross-server opt-in. For every place of the
current server and for a DM, the turn's context is built and compared with
an independent model of the rules (``tests/pipeline/test_visibility_properties``):

* a public channel never sees a private channel's or its threads' content
  (unless the server's bypass is on);
* a DM's memory never reaches a server;
* another server's content appears only with the user's opt-in and only from
  that server's public channels;
* a turn of one persona lineage never sees another lineage's memory;

and, with no cap in the way, exactly what the model allows is shown.

Worlds are drawn like the model test's, but from a seeded ``random.Random``
(Hypothesis supplies the seeds): the same shapes at a fraction of the cost,
which is what makes 10,000 worlds fit in CI. A failure names its seed, and
:func:`world_from_seed` rebuilds that world exactly. The memory backend keeps
turns fast; ``derandomize`` makes every CI run check the same worlds.
``make reliability`` runs ten times as many.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stm_core.storage.records import MemoryKey
from tests.pipeline.test_visibility_properties import (
    CURRENT,
    LINEAGES,
    PERSONAS,
    USER,
    Row,
    Server,
    World,
    scenario,
)

from .support import add_figure, scaled

WORLDS = scaled(ci=10_000, full=100_000)
COUNT = {"worlds": 0, "turns": 0}
LOOP = asyncio.new_event_loop()


def server_from(rng: random.Random, server_id: str) -> Server:
    channels = tuple(f"{server_id}-c{i}" for i in range(rng.randint(1, 4)))
    threads = {f"{server_id}-t{i}": rng.choice(channels) for i in range(rng.randint(0, 3))}
    private = frozenset(c for c in channels if rng.random() < 0.4)
    return Server(id=server_id, channels=channels, threads=threads, private=private,
                  bypass=rng.random() < 0.3)


def world_from_seed(seed: int) -> World:
    """The same kinds of worlds as the model test's strategy."""
    rng = random.Random(seed)
    all_servers = (server_from(rng, CURRENT),
                   *(server_from(rng, f"H{i}") for i in range(rng.randint(0, 2))))
    dm_channels = tuple(f"dm{i}" for i in range(rng.randint(1, 3)))
    rows: list[Row] = []

    def add(key: MemoryKey, parent: str | None) -> None:
        rows.append(Row(key=key, lineage=rng.choice(LINEAGES), parent=parent))

    for server in all_servers:
        for place in server.places:
            for persona in set(rng.choices(PERSONAS, k=rng.randint(1, 2))):
                parent = server.parent(place)
                add(MemoryKey.server(server.id, place, persona), parent)
                for user in (USER, "bob"):
                    if rng.random() < 0.5:
                        add(MemoryKey.user(user, place, persona, server.id), parent)
    for channel in dm_channels:
        for user in (USER, "bob"):
            if rng.random() < 0.5:
                add(MemoryKey.user(user, channel, rng.choice(PERSONAS), None), None)
    return World(servers=all_servers, dm_channels=dm_channels, rows=tuple(rows),
                 opt_in=rng.random() < 0.5, cap=rng.choice((3, 1000)))


@settings(max_examples=WORLDS, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**63), lineage=st.sampled_from((None, "L1", "L2")))
def test_privacy_and_scope_hold_in_every_generated_world(seed: int,
                                                         lineage: str | None) -> None:
    COUNT["worlds"] += 1
    COUNT["turns"] += LOOP.run_until_complete(scenario(world_from_seed(seed), lineage))


def test_report_privacy_figures(figures: dict[str, Any]) -> None:
    # The property test above ran every world and built turns in each.
    assert COUNT["worlds"] >= WORLDS, COUNT
    assert COUNT["turns"] >= 2 * COUNT["worlds"], COUNT
    add_figure(figures, "privacy_worlds", COUNT["worlds"])
    add_figure(figures, "privacy_turns_checked", COUNT["turns"])
