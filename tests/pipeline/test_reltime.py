"""Relative times of other-channel headers: floor division, negative is "just now"."""

from __future__ import annotations

import pytest

from stm_core.text.reltime import relative_time

MIN = 60_000
HOUR = 60 * MIN
DAY = 24 * HOUR


@pytest.mark.parametrize(("age_ms", "text"), [
    (-5 * MIN, "just now"),
    (0, "just now"),
    (MIN - 1, "just now"),
    (MIN, "1 minute ago"),
    (2 * MIN - 1, "1 minute ago"),
    (2 * MIN, "2 minutes ago"),
    (HOUR - 1, "59 minutes ago"),
    (HOUR, "1 hour ago"),
    (2 * HOUR - 1, "1 hour ago"),
    (2 * HOUR, "2 hours ago"),
    (DAY - 1, "23 hours ago"),
    (DAY, "1 day ago"),
    (2 * DAY, "2 days ago"),
    (7 * DAY - 1, "6 days ago"),
    (7 * DAY, "over a week ago"),
    (400 * DAY, "over a week ago"),
])
def test_relative_time_table(age_ms: int, text: str) -> None:
    assert relative_time(age_ms) == text
