"""What an admin sees of a memory and what an edit stores, at the limits
(docs/admin.md, view_memory and edit_memory)."""

from __future__ import annotations

from stm_core.admin.memory import (
    TRUNCATED_NOTICE,
    VIEW_MAX_CHARS,
    clean_value,
    display_text,
)
from stm_core.admin.values import MemorySection


def summary(text: str) -> tuple[MemorySection, ...]:
    return (MemorySection(slug="summary", label="Summary", text=text),)


def test_a_summary_of_exactly_the_view_limit_is_shown_whole() -> None:
    assert display_text(summary("x" * VIEW_MAX_CHARS), "summary") == ("x" * VIEW_MAX_CHARS,
                                                                      False)


def test_one_character_more_is_cut_with_the_notice() -> None:
    text, truncated = display_text(summary("x" * VIEW_MAX_CHARS + "y"), "summary")
    assert (text, truncated) == ("x" * VIEW_MAX_CHARS + TRUNCATED_NOTICE, True)
    assert TRUNCATED_NOTICE == "\n… (truncated)"


def test_sections_are_shown_as_label_then_text_with_a_blank_line_between() -> None:
    sections = (MemorySection(slug="goals", label="Goals", text="ship"),
                MemorySection(slug="mood", label="Mood", text="calm"))
    assert display_text(sections, "category") == ("Goals:\nship\n\nMood:\ncalm", False)
    # A summary-mode row holding only categories shows them labelled too.
    assert display_text(sections[:1], "summary") == ("Goals:\nship", False)


def test_an_edit_of_exactly_the_limit_is_not_cut() -> None:
    assert clean_value("  " + "x" * 50 + "  ", max_length=50) == ("x" * 50, False)
    assert clean_value("x" * 51, max_length=50) == ("x" * 50, True)
