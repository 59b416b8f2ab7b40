"""``python -m bench.callgrind``: its workloads run, and callgrind's summary is read right.

The counting itself needs valgrind (on the CI machine); one real child run
under it checks the command line and the parsing of a real summary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import callgrind, callgrind_functions

ROOT = Path(__file__).resolve().parents[2]

#: The closing summary of a callgrind run with cache and branch simulation.
SUMMARY = """\
==8099== Events    : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
==8099== Collected : 3747904168 1063216850 607022087 21073804 31290974
==8099==
==8099== I   refs:      3,747,904,168
==8099== I1  misses:       21,073,804
==8099== LLi misses:           29,422
==8099== I1  miss rate:          0.56%
==8099==
==8099== D   refs:      1,670,238,937  (1,063,216,850 rd   + 607,022,087 wr)
==8099== D1  misses:       42,110,776  (   31,290,974 rd   +  10,819,802 wr)
==8099== LLd misses:          870,516  (      144,279 rd   +     726,237 wr)
==8099==
==8099== Branches:        657,491,336  (  556,720,026 cond +  100,771,310 ind)
==8099== Mispredicts:      73,991,919  (   39,614,728 cond +   34,377,191 ind)
==8099== Mispred rate:           11.3% (          7.1%     +         34.1%   )
"""


def test_summary_counts_are_read_with_their_names() -> None:
    assert callgrind.parse_summary(SUMMARY) == {
        "instructions": 3_747_904_168, "i1_misses": 21_073_804, "d1_misses": 42_110_776,
        "lld_misses": 870_516, "mispredicts": 73_991_919}


def test_a_missing_summary_reads_as_no_counts() -> None:
    assert callgrind.parse_summary("valgrind: command not found\n") == {}


def test_per_unit_is_the_difference_over_the_units() -> None:
    none = {"instructions": 1_000, "d1_misses": 10}
    some = {"instructions": 5_000, "d1_misses": 50, "mispredicts": 7}
    assert callgrind.per_unit(none, some, 4) == {"instructions": 1_000, "d1_misses": 10}


@pytest.mark.parametrize("workload", callgrind.WORKLOADS)
@pytest.mark.parametrize("side", callgrind.SIDES)
def test_every_child_workload_runs(workload: str, side: str) -> None:
    ran = callgrind.child(workload, side, 2)
    # Each side runs its own turns; the baseline only makes the Turns.
    assert ran == (0 if side == "turns_only" else callgrind.WARM + 2)


@pytest.mark.parametrize("units", ["0", "-3", "many", "1.5"])
def test_units_out_of_range_or_not_a_whole_number_are_refused(
        units: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        callgrind.main(["--units", units])
    assert stopped.value.code == 2
    assert "--units" in capsys.readouterr().err


def test_an_unknown_workload_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        callgrind.main(["--only", "janitor"])
    assert stopped.value.code == 2 and "--only" in capsys.readouterr().err


def test_without_valgrind_it_says_so(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", "")
    assert callgrind.main(["--units", "1"]) == 2
    assert "valgrind is not on the PATH" in capsys.readouterr().err


def test_each_side_is_counted_less_the_turns_alone_and_set_beside_the_floor() -> None:
    counts = {("build", "turns_only", 0): {"instructions": 1_000, "lld_misses": 5},
              ("build", "turns_only", 10): {"instructions": 2_000, "lld_misses": 5},
              ("build", "stm", 0): {"instructions": 1_100, "lld_misses": 5},
              ("build", "stm", 10): {"instructions": 5_100, "lld_misses": 9},
              ("build", "floor", 0): {"instructions": 1_050, "lld_misses": 5},
              ("build", "floor", 10): {"instructions": 3_050, "lld_misses": 5}}
    build = callgrind.summarize(counts, {"build": 10})["build"]
    # stm: 400 a unit, less the Turns' 100; the floor: 200 less 100.
    assert build["per_unit"] == {"stm": {"instructions": 300.0, "lld_misses": 0.4},
                                 "floor": {"instructions": 100.0, "lld_misses": 0.0}}
    # Under one a unit on the floor's side is noise: no ratio of it.
    assert build["stm_over_floor"] == {"instructions": 3.0}
    table = callgrind.table({"build": build})
    assert "| build | stm | 300 | 0 | 0 | 0 | 0 |" in table
    assert "| build | stm ÷ floor | 3.00 | — | — | — | — |" in table


def test_the_readme_command_writes_its_counts(tmp_path: Path) -> None:
    # bench/README's command, made small: one workload, a few turns (too few
    # for the figures to mean anything: start-up noise swamps them).
    done = subprocess.run([sys.executable, "-m", "bench.callgrind", "--only", "build",
                           "--units", "1", "--functions", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "callgrind.json").read_text(encoding="utf-8"))
    build = results["build"]
    assert build["units"] == 4 and set(build["per_unit"]) == {"stm", "floor"}
    for side in ("stm", "floor"):
        assert set(build["per_unit"][side]) == set(callgrind.COUNTS.values())
    assert set(build["turn_objects_per_unit"]) == set(callgrind.COUNTS.values())
    assert len(results["load_average"]) == 3 and "host" not in results
    assert "| build | stm ÷ floor |" in done.stdout
    # --functions: the real profiles were annotated and read, function by function.
    extra = results["functions"]["build"]
    assert set(extra) == {"d1_read_misses", "instructions", "mispredicts"}
    assert any(name.startswith("ceval.c:") for name, _, _ in extra["instructions"])
    assert "build: stm's extra instructions per unit, by function" in done.stdout


def test_a_child_under_callgrind_reports_its_counts() -> None:
    counts = callgrind.counted("build", "floor", 0)
    assert set(counts) == set(callgrind.COUNTS.values())
    assert counts["instructions"] > counts["mispredicts"] > 0


#: Lines of a ``callgrind_annotate --show=Ir,D1mr,Bcm,Bim`` listing.
LISTING = "\n".join([
    "-" * 80,
    "Ir                     D1mr                Bcm                 Bim",
    "-" * 80,
    "1,997,052,620 (100.0%) 14,423,716 (100.0%) 20,404,282 (100.0%) 14,868,202 (100.0%)  "
    "PROGRAM TOTALS",
    "",
    "-" * 80,
    "Ir                   D1mr               Bcm                Bim                 "
    "file:function",
    "-" * 80,
    "267,620,234 (13.40%) 1,467,705 (10.18%) 1,770,185 ( 8.68%) 5,745,570 (38.64%)  "
    "/b/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/lib/py.so]",
    " 10,000,000 ( 0.50%)     1,000 ( 0.01%)        30 ( 0.00%)        10 ( 0.00%)  "
    "/b/Python/ceval.c:_PyEval_EvalFrameDefault [/lib/py.so]",
    "150,937,615 ( 7.56%)   822,654 ( 5.70%) 2,287,314 (11.21%)         .           "
    "/b/Objects/dictobject.c:unicodekeys_lookup_unicode [/lib/py.so]",
])


def test_function_counts_are_read_from_the_annotated_listing() -> None:
    counts = callgrind_functions.parse_functions(LISTING)
    # Recursion depths are one function; the totals line is none; "." is zero.
    assert counts == {
        "ceval.c:_PyEval_EvalFrameDefault": {
            "instructions": 277_620_234, "d1_read_misses": 1_468_705,
            "mispredicts": 1_770_215 + 5_745_580},
        "dictobject.c:unicodekeys_lookup_unicode": {
            "instructions": 150_937_615, "d1_read_misses": 822_654, "mispredicts": 2_287_314}}


def test_stms_extra_counts_are_ranked_by_function() -> None:
    none = {"a.c:f": {"instructions": 100}, "b.c:g": {"instructions": 50}}
    some = {"a.c:f": {"instructions": 1_100}, "b.c:g": {"instructions": 250},
            "c.c:h": {"instructions": 40}}
    stm = callgrind_functions.per_unit(none, some, 10)
    assert stm == {"a.c:f": {"instructions": 100}, "b.c:g": {"instructions": 20},
                   "c.c:h": {"instructions": 4}}
    floor = {"a.c:f": {"instructions": 40}, "b.c:g": {"instructions": 24}}
    # f: 60 more a unit, h: 4 more, g: 4 fewer; shares of the net extra (60).
    assert callgrind_functions.extra(stm, floor, "instructions") == [
        ("a.c:f", 60, 1.0), ("c.c:h", 4, 0.067)]
    table = callgrind_functions.table({"build": {"instructions": [("a.c:f", 60, 1.0)]}})
    assert "| `a.c:f` | 60 | 100% |" in table
