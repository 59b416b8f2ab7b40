"""``python -m bench.callgrind``: its workloads run, and callgrind's summary is read right.

The counting itself needs valgrind (on the CI machine); one real child run
under it checks the command line and the parsing of a real summary.
"""

from __future__ import annotations

import pytest

from bench import callgrind

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
    callgrind.child(workload, side, 2)


def test_a_child_under_callgrind_reports_its_counts() -> None:
    counts = callgrind.counted("build", "floor", 0)
    assert set(counts) == set(callgrind.COUNTS.values())
    assert counts["instructions"] > counts["mispredicts"] > 0
