"""Where stm's extra counts fall, function by function (``python -m bench.callgrind --functions``).

Each counted child leaves callgrind's profile; ``callgrind_annotate`` lists
every function's instructions, first-level data-cache read misses and
mispredicted branches (conditional and indirect), inclusive of nothing: a
function's own counts. The same arithmetic as the totals (a run of many
units less a run of none, over the units) is done per function, for stm and
for the floor; their difference, largest first, says which parts of the
interpreter stm keeps busier: the evaluation loop (more bytecode, more
frames), the collector (more container objects made per turn), dictionary and
type lookups, the allocator.

Functions are named by their source file's base name and their name, with
callgrind's recursion marks (``'2``) dropped, so the same C function from two
builds of Python, or at two recursion depths, counts as one.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

#: The events asked of ``callgrind_annotate``, and their keys here.
EVENTS = {"Ir": "instructions", "D1mr": "d1_read_misses", "Bcm": "mispredicts",
          "Bim": "mispredicts"}
#: One function's line: a count (or ``.``) per event, then ``file:function [object]``.
_COUNT = r"([\d,]+|\.)(?:\s+\([\d. ]+%\))?"
_LINE = re.compile(r"^\s*" + r"\s+".join([_COUNT] * len(EVENTS)) + r"\s+(\S.*?)(?:\s+\[.*\])?$")
_RECURSION = re.compile(r"'\d+$")

FunctionCounts = dict[str, dict[str, int]]


def annotate(profile: Path) -> str:
    """``callgrind_annotate``'s listing of every function of ``profile``."""
    done = subprocess.run(["callgrind_annotate", f"--show={','.join(EVENTS)}",
                           "--threshold=100", str(profile)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"callgrind_annotate failed on {profile}: {done.stderr[-500:]}")
    return done.stdout


def parse_functions(listing: str) -> FunctionCounts:
    """Each function's own counts in a ``callgrind_annotate`` listing (the
    program totals line is not a function and is left out)."""
    found: FunctionCounts = defaultdict(lambda: dict.fromkeys(set(EVENTS.values()), 0))
    for line in listing.splitlines():
        match = _LINE.match(line)
        if match is None or match.group(len(EVENTS) + 1) == "PROGRAM TOTALS":
            continue
        name = function_name(match.group(len(EVENTS) + 1))
        counts = found[name]
        for event, value in zip(EVENTS.values(), match.groups()[:len(EVENTS)], strict=True):
            if value != ".":
                counts[event] += int(value.replace(",", ""))
    return dict(found)


def function_name(location: str) -> str:
    """``file.c:function`` from callgrind's ``/path/to/file.c:function'2``."""
    file, _, function = location.rpartition(":")
    return f"{Path(file).name}:{_RECURSION.sub('', function)}" if file else location


def per_unit(none: FunctionCounts, some: FunctionCounts, units: int) -> FunctionCounts:
    """What one unit adds to each function: the runs' difference over the units."""
    zero = dict.fromkeys(set(EVENTS.values()), 0)
    return {name: {k: round((v - none.get(name, zero)[k]) / units) for k, v in counts.items()}
            for name, counts in some.items()}


def extra(stm: Mapping[str, Mapping[str, int]], floor: Mapping[str, Mapping[str, int]],
          event: str, top: int = 12) -> list[tuple[str, int, float]]:
    """The ``top`` functions by what stm spends on ``event`` per unit beyond
    the floor: ``(function, extra per unit, share of the whole extra)``."""
    names = set(stm) | set(floor)
    diffs = {n: stm.get(n, {}).get(event, 0) - floor.get(n, {}).get(event, 0) for n in names}
    total = sum(diffs.values())
    ranked = sorted(diffs.items(), key=lambda item: -item[1])[:top]
    return [(name, diff, round(diff / total, 3) if total > 0 else 0.0)
            for name, diff in ranked if diff > 0]


def table(breakdown: Mapping[str, Mapping[str, list[tuple[str, int, float]]]]) -> str:
    lines = []
    for workload, by_event in breakdown.items():
        for event, rows in by_event.items():
            lines += ["", f"{workload}: stm's extra {event} per unit, by function",
                      "", "| function | extra per unit | share |", "|---|---:|---:|"]
            lines += [f"| `{name}` | {diff:,} | {share:.0%} |" for name, diff, share in rows]
    return "\n".join(lines)
