"""Janitor batches shrink when they run long and grow back when they are quick."""

from __future__ import annotations

from stm_core.janitor import BatchSizer


def test_batches_shrink_over_budget_and_grow_back_within_bounds() -> None:
    sizer = BatchSizer(maximum=1000, budget_s=0.004)
    assert sizer.size == 100
    for _ in range(10):
        sizer.observe(0.050)
    assert sizer.size == BatchSizer.MINIMUM
    sizer.observe(0.003)  # within budget but not under half: unchanged
    assert sizer.size == BatchSizer.MINIMUM
    for _ in range(30):
        sizer.observe(0.0005)
    assert sizer.size == 1000


def test_a_small_maximum_is_never_exceeded() -> None:
    sizer = BatchSizer(maximum=5, budget_s=0.004)
    assert sizer.size == 5
    sizer.observe(0.0)
    assert sizer.size == 5
