"""The placeholder sanitiser and macro expansion (reference §4.3 step 3,
DESIGN decisions 3 and 13)."""

from __future__ import annotations

import pytest

from stm_core.text.templates import MAX_EXPANDED_LENGTH, expand, sanitize


@pytest.mark.parametrize("macro", ["user", "user_formatted", "user_term", "bot", "char"])
def test_identity_macros_keep_their_braces_for_mention_conversion(macro: str) -> None:
    assert sanitize(f"hi {{{macro}}}!") == f"hi {{{macro}}}!"
    assert sanitize(f"hi {{{{{macro}}}}}!") == f"hi {{{{{macro}}}}}!"


@pytest.mark.parametrize("macro", ["User", "BOT", "Char", "USER_TERM", "User_Formatted"])
def test_identity_macros_are_recognised_in_any_case(macro: str) -> None:
    assert sanitize(f"{{{macro}}}") == f"{{{macro}}}"


@pytest.mark.parametrize(("text", "clean"), [
    ("{unknown}", "unknown"),
    ("{{unknown}}", "unknown"),
    ("a {x1} b {y_2}", "a x1 b y_2"),
    ("{users}", "users"),           # an identity macro's name is matched whole
    ("{botname}", "botname"),
])
def test_unknown_placeholders_are_stripped_to_their_bare_name(text: str, clean: str) -> None:
    assert sanitize(text) == clean


@pytest.mark.parametrize("text", [
    "{ spaced }", "{1abc}", "{a-b}", "{}", '{"json": 1}', "{_x}", "{é}",
])
def test_braces_that_are_not_identifier_shaped_are_left_alone(text: str) -> None:
    assert sanitize(text) == text


def test_expansion_replaces_every_occurrence_and_leaves_unknown_names() -> None:
    values = {"tool": "`update_short_term_memory`"}
    assert expand("{tool} then {tool} and {other}", values) == (
        "`update_short_term_memory` then `update_short_term_memory` and {other}")


def test_expansion_with_no_values_or_no_braces_returns_the_text() -> None:
    assert expand("{tool}", {}) == "{tool}"
    assert expand("plain", {"tool": "x"}) == "plain"


def test_expanded_text_is_cut_at_the_ceiling() -> None:
    big = "x" * 1000
    text = "{m}" * (MAX_EXPANDED_LENGTH // 1000 + 5)
    out = expand(text, {"m": big})
    assert len(out) == MAX_EXPANDED_LENGTH
    assert MAX_EXPANDED_LENGTH == 64_000
    exact = "{m}" * (MAX_EXPANDED_LENGTH // 1000)
    assert len(expand(exact, {"m": big})) == MAX_EXPANDED_LENGTH


def test_text_without_placeholders_is_returned_whole_whatever_its_length() -> None:
    long = "a" * (MAX_EXPANDED_LENGTH + 10)
    assert expand(long, {"x": "y"}) == long
