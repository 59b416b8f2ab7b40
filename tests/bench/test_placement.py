"""``bench.placement.one_cpu``: every thread on one CPU, and the CPUs given back."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from bench import placement
from bench.harness import interleave

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"),
                                reason="threads cannot be pinned on this platform")


def affinities() -> dict[int, set[int]]:
    return {tid: os.sched_getaffinity(tid) for tid in placement.thread_ids()}


def test_every_thread_old_and_new_is_pinned_then_given_back() -> None:
    allowed = os.sched_getaffinity(0)
    release = threading.Event()
    before = threading.Thread(target=release.wait, daemon=True)
    before.start()
    seen: dict[str, set[int]] = {}

    def record() -> None:
        seen["inside"] = os.sched_getaffinity(0)

    with placement.one_cpu() as cpu:
        assert cpu == min(allowed)
        assert set(map(frozenset, affinities().values())) == {frozenset({cpu})}
        started = threading.Thread(target=record)
        started.start()
        started.join()
        late = threading.Thread(target=release.wait, daemon=True)
        late.start()
    assert seen["inside"] == {cpu}  # a thread started inside inherits the CPU
    assert all(cpus == allowed for cpus in affinities().values())
    assert late.native_id is not None
    assert os.sched_getaffinity(late.native_id) == allowed
    release.set()


def test_the_cpus_are_given_back_when_the_block_raises() -> None:
    allowed = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError), placement.one_cpu():
        raise RuntimeError("a scenario failed")
    assert os.sched_getaffinity(0) == allowed


def test_interleave_on_one_cpu_runs_its_turns_there() -> None:
    allowed = os.sched_getaffinity(0)
    seen: set[frozenset[int]] = set()

    async def turn(_i: int) -> None:
        seen.add(frozenset(await asyncio.to_thread(os.sched_getaffinity, 0)))

    stats = asyncio.run(interleave({"a": turn}, rounds=1, turns=5, placement="one_cpu"))
    assert stats["a"].n == 5
    assert seen == {frozenset({min(allowed)})}
    assert os.sched_getaffinity(0) == allowed


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_across_cpus_keeps_the_loop_apart_from_every_other_thread() -> None:
    allowed = os.sched_getaffinity(0)
    loop_cpu, other_cpu = sorted(allowed)[:2]
    main = threading.get_native_id()
    loops: set[frozenset[int]] = set()
    at_block_start: list[dict[int, set[int]]] = []
    indexes: list[int] = []

    async def turn(i: int) -> None:
        indexes.append(i)
        if i > 1000 and (i - 1001) % 25 == 0:  # the first turn of a timed block
            at_block_start.append(affinities())
        loops.add(frozenset(os.sched_getaffinity(0)))
        await asyncio.to_thread(os.sched_getaffinity, 0)

    # Pool threads start in the turns (inheriting the loop's CPU); each block
    # starts with every one of them moved to the other CPU.
    asyncio.run(interleave({"a": turn}, rounds=1, turns=50, block=25, warmup=1,
                           placement="across_cpus", first=1000))
    assert indexes[0] == 1000 and indexes[-1] == 1050
    assert loops == {frozenset({loop_cpu})}
    assert len(at_block_start) == 2
    for pinned in at_block_start:
        workers = {tid: cpus for tid, cpus in pinned.items() if tid != main}
        assert workers and all(cpus == {other_cpu} for cpus in workers.values())
        assert pinned[main] == {loop_cpu}
    assert os.sched_getaffinity(0) == allowed


def test_an_unknown_placement_is_refused() -> None:
    async def turn(_i: int) -> None:
        return None

    with pytest.raises(ValueError, match="placement"):
        asyncio.run(interleave({"a": turn}, rounds=1, turns=1, placement="everywhere"))
