"""Parsing ``label: description`` lines (docs/admin.md, set_categories), at the edges."""

from __future__ import annotations

import pytest

from stm_core.admin.categories import (
    check_categories,
    format_category_lines,
    parse_category_lines,
)
from stm_core.errors import ValidationError


def parse(lines: str | list[str], max_categories: int = 5) -> list[tuple[int, str, str]]:
    return [(c.position, c.label, c.description)
            for c in parse_category_lines(lines, max_categories=max_categories)]


def refusal(lines: str | list[str], max_categories: int = 5) -> ValidationError:
    with pytest.raises(ValidationError) as refused:
        parse_category_lines(lines, max_categories=max_categories)
    assert refused.value.field == "categories"
    return refused.value


def test_split_at_the_first_colon_and_trimmed() -> None:
    assert parse(["  Time :  at 12:30, sharp  "]) == [(0, "Time", "at 12:30, sharp")]


def test_blank_lines_are_skipped_and_positions_renumbered() -> None:
    assert parse("\n  \nA: first\n\t\nB: second\n") == [(0, "A", "first"), (1, "B", "second")]
    assert parse(["", "   "]) == []


def test_a_refusal_names_the_line_counting_blank_ones() -> None:
    error = refusal("A: first\n\nno colon here")
    assert str(error).startswith("categories line 3: invalid format 'no colon here'")
    assert error.allowed == "label: description"


def test_a_line_of_exactly_1000_characters_is_accepted() -> None:
    line = "L: " + "x" * 997
    assert len(line) == 1000
    assert parse([line]) == [(0, "L", "x" * 997)]


def test_a_line_of_1001_characters_is_refused() -> None:
    error = refusal(["L: " + "x" * 998])
    assert "categories line 1: 1001 characters; at most 1000 per line" in str(error)
    assert error.allowed == "lines of at most 1000 characters"


def test_an_imported_category_is_measured_as_its_line() -> None:
    # A configuration document has no lines: "label: description" must fit in 1000.
    fits = check_categories([("categories[0]", "L", "x" * 997)], max_categories=5)
    assert len(format_category_lines(fits)[0]) == 1000
    with pytest.raises(ValidationError, match=r"^categories\[0\]: longer than 1000 characters$"):
        check_categories([("categories[0]", "L", "x" * 998)], max_categories=5)


def test_exactly_max_categories_is_accepted_one_more_is_refused() -> None:
    assert len(parse([f"C{i}: d" for i in range(3)], max_categories=3)) == 3
    error = refusal([f"C{i}: d" for i in range(4)], max_categories=3)
    assert str(error) == "too many categories: at most 3"
    assert error.allowed == "at most 3 categories"


@pytest.mark.parametrize(("line", "says"), [
    (": no label", "categories line 1: invalid category, the label is empty"),
    ("Label:   ", "categories line 1: invalid category, the description is empty"),
    ("日本語: only non-ASCII", "categories line 1: invalid category, the label '日本語' has "
                             "no ASCII letter or digit"),
])
def test_empty_parts_and_unnamed_labels_are_refused(line: str, says: str) -> None:
    assert str(refusal([line])).startswith(says)


def test_a_duplicate_names_both_labels_and_the_field() -> None:
    error = refusal(["Goals: a", "goals!: b"])
    assert str(error) == ("categories line 2: duplicate category 'goals!' (same field name "
                          "'goals' as 'Goals')")
    assert error.allowed == "labels with distinct field names"


@pytest.mark.parametrize(("entry", "message", "allowed"), [
    (("categories[0]", " ", "d"),
     "categories[0]: invalid category, the label is empty; write 'label: description'",
     "label: description"),
    (("categories[0]", "L", " "),
     "categories[0]: invalid category, the description is empty; write 'label: description'",
     "label: description"),
    (("categories[0]", "Time: now", "d"),
     "categories[0]: invalid category, the label 'Time: now' contains ':'",
     "labels without ':'"),
    (("categories[0]", "L", "x" * 998),
     "categories[0]: longer than 1000 characters", "at most 1000 characters per category"),
    (("categories[0]", "日本語", "d"),
     "categories[0]: invalid category, the label '日本語' has no ASCII letter or digit to "
     "name its field", "labels with at least one ASCII letter or digit"),
])
def test_each_refused_category_says_what_is_wrong_and_what_is_allowed(
        entry: tuple[str, str, str], message: str, allowed: str) -> None:
    with pytest.raises(ValidationError) as refused:
        check_categories([entry], max_categories=5)
    assert (str(refused.value), refused.value.field, refused.value.allowed) == \
        (message, "categories", allowed)
