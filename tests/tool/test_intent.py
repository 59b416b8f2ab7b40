"""Explicit long-term intent (reference §3.1, DESIGN decision 9)."""

from __future__ import annotations

import pytest

from stm_core.text.intent import detect_long_term_intent

# Each phrase of reference §3.1 is written out in tests/rules/test_long_term_intent_phrases.py.


@pytest.mark.parametrize("message", [
    "REMEMBER my birthday is in May",
    "Please  commit\tto\n memory: I like tea",
    "Note: I'm vegetarian.",
    "don’t forget the milk",  # typographic apostrophe
    "ｒｅｍｅｍｂｅｒ this",  # full-width letters, NFKC
    "rememberしてね",
    "これ覚えてね",
    "明日のこと、忘れないでね",
    "save it for future reference!",
])
def test_triggers(message: str) -> None:
    assert detect_long_term_intent(message)


@pytest.mark.parametrize("message", [
    "I left my notebook at home",
    "I remembered where it was",
    "notes from the meeting",
    "don't  worry, I won't forget",
    "in future conversations we should",
    "",
    "覚えています",
])
def test_does_not_trigger(message: str) -> None:
    assert not detect_long_term_intent(message)
