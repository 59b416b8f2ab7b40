"""``turn_names_us``: what a big guild's names cost a turn.

A host passes the guild's channel names (threads are channels) and thread
ids with every ``Turn``. Each scenario builds a ``Turn`` the way a host does
for a guild of 5,000 channels and 500 threads, then labels three channels as
a build's headers do: from plain mappings (checked, copied and searched for
shared names again on every turn) and from a ``NameMap`` and ``IdSet`` built
once for the guild.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from bench.config import RunConfig
from bench.harness import cpu_ratio, interleave, ratio
from stm_core.mention_names import channel_label
from stm_core.models import Turn
from stm_core.name_maps import IdSet, NameMap

CHANNELS = 5_000
THREADS = 500
SHOWN = ("17", "2500", "4999")


def _turns(names: Mapping[str, str], threads: Collection[str]) -> Callable[[int], None]:
    def one(i: int) -> None:
        turn = Turn(user_id="42", channel_id=str(i % CHANNELS), server_id="7",
                    channel_names=names, thread_ids=threads)
        for channel in SHOWN:
            channel_label(channel, turn)
    return one


async def run(cfg: RunConfig) -> dict[str, Any]:
    names = {str(n): f"channel-{n}" for n in range(CHANNELS)}
    threads = {str(n) for n in range(THREADS)}
    stats = await interleave({
        "turn_plain_names": _turns(names, threads),
        "turn_name_map": _turns(NameMap(names), IdSet(threads)),
    }, rounds=cfg.rounds, turns=cfg.turns, warmup=cfg.warmup)
    return {
        "turn_names_us": {name: round(s.median_us, 2) for name, s in stats.items()},
        "turn_names_cpu_us": {name: None if s.cpu_us is None else round(s.cpu_us, 2)
                              for name, s in stats.items()},
        # How many times faster the checked-once maps make the turn's names.
        "turn_names_ratio": ratio(stats["turn_plain_names"], stats["turn_name_map"]),
        "turn_names_cpu_ratio": cpu_ratio(stats["turn_plain_names"], stats["turn_name_map"]),
        "turn_names_guild": {"channels": CHANNELS, "threads": THREADS},
        "scenarios": {name: s.to_json() for name, s in stats.items()},
    }
