"""Instructions, cache misses and branch mispredictions per turn, stm beside its floors.

``python -m bench.callgrind`` runs each workload in a child Python under
valgrind's callgrind (cache and branch simulation on) twice, once doing no
turn and once doing ``--units`` of them, and divides the difference by the
units: what one more turn costs, whatever the process spends starting up.
A third run per workload makes the host's ``Turn`` objects and does nothing
else; it is subtracted from both sides, as a host builds its ``Turn``
whatever it calls. The counts are the same from run to run and do not move
with the other vCPU, so they say where a CPU-time gap comes from that timing
alone cannot: more instructions, or the same instructions running slower
(data-cache misses, mispredicted branches). Every thread is counted (the
writer threads run the same SQL on both sides).

Workloads: ``host`` (``record_turn`` + ``build_context`` over 100 channels
against the floor's write and hand-written build, as ``turn_ratio_sqlite``),
``record`` (``record_turn`` alone against the floor's write, as
``record_ratio_sqlite``) and ``build`` (warm ``build_context`` of the typical
server in ``supersede`` mode against ``floors.HandBuild``, as ``build_ratio``).
Needs valgrind on the PATH; takes a few minutes (each child runs about fifty
times slower than natively). Writes ``callgrind.json`` beside this file (``--out``).

Two runs of one child differ by a few million instructions (start-up, the
collector), so a figure per turn is only as good as the units are many: the
default 500 host turns and 2,000 builds keep it within about 1 %.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import callgrind_functions

#: What callgrind's summary calls each count (spaces squeezed), and its key here.
COUNTS = {"I refs": "instructions", "D1 misses": "d1_misses", "LLd misses": "lld_misses",
          "I1 misses": "i1_misses", "Mispredicts": "mispredicts"}
_SUMMARY = re.compile(r"==\d+== ([A-Za-z0-9 ]+?):\s+([\d,]+)")
WORKLOADS = ("host", "record", "build")
SIDES = ("stm", "floor", "turns_only")
#: Turns every counted run does first, whatever its units (warm caches and memos).
WARM = 200


def parse_summary(stderr: str) -> dict[str, int]:
    """The counts of callgrind's closing summary (the first of each kind)."""
    found: dict[str, int] = {}
    for name, value in _SUMMARY.findall(stderr):
        key = COUNTS.get(" ".join(name.split()))
        if key is not None and key not in found:
            found[key] = int(value.replace(",", ""))
    return found


def per_unit(none: dict[str, int], some: dict[str, int], units: int) -> dict[str, float]:
    return {k: (some[k] - none[k]) / units for k in some if k in none}


# -- the children -------------------------------------------------------------------


async def _host(side: str, units: int, record_only: bool = False) -> int:
    from bench import workload as w
    from bench.floors_thread import InlineWriter
    from bench.scenarios_record import (
        Workload,
        host_turn_pair,
        raw_record,
        stm_record,
        thread_writer,
    )
    from bench.stm_side import open_bench_store
    from bench.urls import sqlite_url
    from stm_core._util.clock import ManualClock

    load = Workload(channels=100, server=w.server_id(502))
    load.prepare(101 + WARM + units)  # every side makes the same Turns
    clock = ManualClock(w.EPOCH_MS)
    work = Path(tempfile.mkdtemp())
    # stm writes a lone turn on the caller's thread: so does the floor.
    writer = await thread_writer(work / "floor.db", clock, kind=InlineWriter)
    try:
        async with open_bench_store(sqlite_url(work / "stm.db"), clock) as stm:
            pair = await host_turn_pair(stm, clock, writer, load)
            run: Callable[[int], Awaitable[object]] | None = (
                pair.ours if side == "stm" else pair.theirs if side == "floor" else None)
            if record_only and run is not None:
                run = (stm_record(stm, clock, load) if side == "stm"
                       else raw_record(writer, load))
            if run is None:
                return 0
            for i in range(101, 101 + WARM + units):
                await run(i)
            return WARM + units
    finally:
        await writer.close()
        shutil.rmtree(work, ignore_errors=True)


async def _build(side: str, units: int) -> int:
    from bench import workload as w
    from bench.floors import bench_hand_build, floor_server
    from bench.stm_side import open_bench_store, seed_typical_server
    from bench.urls import sqlite_url
    from stm_core._util.clock import ManualClock

    seeds = w.typical_server(w.EPOCH_MS)
    names = w.channel_names(seeds)
    live, server = seeds[0].channel_id, w.server_id(1)
    turns = [w.build_turn(server, live, names) for _ in range(WARM + units)]
    work = Path(tempfile.mkdtemp())
    try:
        async with open_bench_store(sqlite_url(work / "build.db"),
                                    ManualClock(w.EPOCH_MS)) as stm:
            await seed_typical_server(stm, server, seeds, now_ms=w.EPOCH_MS,
                                      render_mode="supersede")
            hand = bench_hand_build({server: floor_server(seeds, now_ms=w.EPOCH_MS,
                                                          render_mode="supersede")},
                                    channel_names=names, now_ms=w.EPOCH_MS)
            if side == "stm":
                for turn in turns:
                    await stm.build_context(turn)
            elif side == "floor":
                for _ in turns:
                    hand.build(server, live)
            else:
                return 0
            return len(turns)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def child(workload: str, side: str, units: int) -> int:
    """One workload's side; the turns it ran (none for ``turns_only``)."""
    if workload == "build":
        return asyncio.run(_build(side, units))
    return asyncio.run(_host(side, units, record_only=workload == "record"))


# -- the parent ---------------------------------------------------------------------


def counted(workload: str, side: str, units: int,
            profile: Path | None = None) -> dict[str, int]:
    """One child under callgrind; its summary counts (its profile kept in
    ``profile`` when given, else thrown away)."""
    command = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
               f"--callgrind-out-file={profile or os.devnull}", sys.executable, "-m",
               "bench.callgrind", "--child", workload, side, str(units)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    counts = parse_summary(done.stderr)
    if done.returncode != 0 or "instructions" not in counts:
        raise RuntimeError(f"callgrind run {workload}/{side}/{units} failed "
                           f"(exit {done.returncode}): {done.stderr[-2000:]}")
    return counts


Counts = dict[tuple[str, str, int], dict[str, int]]
Run = tuple[str, str, int]


def measure(units: dict[str, int], jobs: int = 2, *, functions: bool = False) -> dict[str, Any]:
    """Every workload's counts per unit; with ``functions``, also where stm's
    extra counts fall, function by function (:mod:`bench.callgrind_functions`)."""
    runs = [(wl, side, n) for wl in units for side in SIDES for n in (0, units[wl])]
    with tempfile.TemporaryDirectory(prefix="stm-callgrind-") as scratch:
        def profile_of(run: Run) -> Path | None:
            # Only stm's and the floor's profiles are compared; the rest are not kept.
            keep = functions and run[1] != "turns_only"
            return Path(scratch, "-".join(map(str, run)) + ".out") if keep else None

        def count(run: Run) -> dict[str, int]:
            workload, side, n = run
            return counted(workload, side, n, profile_of(run))

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            counts = dict(zip(runs, pool.map(count, runs), strict=True))
        results = summarize(counts, units)
        if functions:
            results["functions"] = by_function(units, profile_of)
    return results


def by_function(units: dict[str, int],
                profile_of: Callable[[Run], Path | None]) -> dict[str, Any]:
    """Per workload and event, the functions stm keeps busier than the floor."""
    breakdown: dict[str, Any] = {}
    for wl, n in units.items():
        sides = {}
        for side in ("stm", "floor"):
            none, some = (profile_of((wl, side, k)) for k in (0, n))
            assert none is not None and some is not None
            sides[side] = callgrind_functions.per_unit(
                callgrind_functions.parse_functions(callgrind_functions.annotate(none)),
                callgrind_functions.parse_functions(callgrind_functions.annotate(some)), n)
        breakdown[wl] = {event: callgrind_functions.extra(sides["stm"], sides["floor"], event)
                         for event in ("d1_read_misses", "instructions", "mispredicts")}
    return breakdown


def summarize(counts: Counts, units: dict[str, int]) -> dict[str, Any]:
    """Per unit of each workload: each side's counts less the Turns-only
    baseline's, and stm's over the floor's."""
    results: dict[str, Any] = {}
    for wl, n in units.items():
        base = per_unit(counts[(wl, "turns_only", 0)], counts[(wl, "turns_only", n)], n)
        sides = {side: {k: max(0.0, round(v - base[k], 1)) for k, v in
                        per_unit(counts[(wl, side, 0)], counts[(wl, side, n)], n).items()}
                 for side in ("stm", "floor")}
        # A count under one per turn on the floor's side is noise (last-level
        # misses of a warm process): no ratio is made of it.
        results[wl] = {"units": n, "per_unit": sides, "turn_objects_per_unit": base,
                       "stm_over_floor": {k: round(sides["stm"][k] / sides["floor"][k], 3)
                                          for k in sides["stm"] if sides["floor"].get(k, 0) >= 1}}
    return results


def table(results: dict[str, Any]) -> str:
    keys = ("instructions", "d1_misses", "lld_misses", "i1_misses", "mispredicts")
    lines = ["| workload | side | " + " | ".join(keys) + " |",
             "|---|---|" + "---:|" * len(keys)]
    for wl, r in results.items():
        for side in ("stm", "floor"):
            lines.append(f"| {wl} | {side} | "
                         + " | ".join(f"{r['per_unit'][side].get(k, 0):,.0f}" for k in keys)
                         + " |")
        ratios = r["stm_over_floor"]
        lines.append(f"| {wl} | stm ÷ floor | "
                     + " | ".join(f"{ratios[k]:.2f}" if k in ratios else "—" for k in keys)
                     + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.callgrind", description=__doc__)
    parser.add_argument("--units", type=int, default=500,
                        help="host turns per counted run (builds: four times as many)")
    parser.add_argument("--only", choices=WORKLOADS, action="append")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--functions", action="store_true",
                        help="also list, function by function, where stm's extra counts fall")
    parser.add_argument("--child", nargs=3, metavar=("WORKLOAD", "SIDE", "UNITS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, side, units = args.child
        child(workload, side, int(units))
        return 0
    if args.units < 1:
        parser.error("--units must be at least 1")
    if shutil.which("valgrind") is None:
        print("valgrind is not on the PATH (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    chosen = args.only or list(WORKLOADS)
    units = {wl: args.units * (4 if wl == "build" else 1) for wl in chosen}
    results = measure(units, functions=args.functions)
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "callgrind.json").write_text(json.dumps(results, indent=2) + "\n")
    print(table({wl: results[wl] for wl in chosen}))
    if args.functions:
        print(callgrind_functions.table(results["functions"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
