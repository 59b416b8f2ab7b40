"""Explicit long-term intent: the phrases of reference §3.1, written out here
(not imported from the code, so a phrase dropped from the code is caught), and
the whole-word rule of DESIGN decision 9."""

from __future__ import annotations

import pytest

from stm_core.text.intent import detect_long_term_intent

REFERENCE_ENGLISH = (
    "remember",
    "don't forget",
    "note",
    "commit to memory",
    "for future conversations",
    "for future reference",
)
REFERENCE_JAPANESE = (
    "覚えておいて",
    "覚えといて",
    "これを覚えて",
    "これ覚えて",
    "それを覚えて",
    "それ覚えて",
    "忘れないで",
    "今後のために覚えて",
    "後で使えるように覚えて",
)


@pytest.mark.parametrize("phrase", REFERENCE_ENGLISH + REFERENCE_JAPANESE)
def test_each_reference_phrase_triggers_inside_a_sentence(phrase: str) -> None:
    assert detect_long_term_intent(f"ok, {phrase} that please")


@pytest.mark.parametrize("phrase", REFERENCE_ENGLISH)
def test_english_phrases_trigger_at_the_edges_of_the_message(phrase: str) -> None:
    assert detect_long_term_intent(phrase)
    assert detect_long_term_intent(f"{phrase}.")
    assert detect_long_term_intent(f"well: {phrase}")


@pytest.mark.parametrize("message", [
    "the keynote was long",          # "note" preceded by a letter
    "a footnote",
    "unremember",                    # "remember" preceded by letters
    "x_note",                        # underscores are word characters too
    "2note",
    "notes",                         # followed by a letter
    "note_taking",
    "remember2",
    "i don't forgetti",
])
def test_english_phrases_inside_longer_words_do_not_trigger(message: str) -> None:
    assert not detect_long_term_intent(message)


@pytest.mark.parametrize("apostrophe", ["'", "\u2019", "\u2018", "\u02bc"])
def test_every_apostrophe_a_phone_types_counts_in_dont_forget(apostrophe: str) -> None:
    assert detect_long_term_intent(f"don{apostrophe}t forget my name")


def test_spacing_and_case_are_normalised_before_matching() -> None:
    assert detect_long_term_intent("COMMIT   TO\u3000MEMORY")  # ideographic space, NFKC
    assert not detect_long_term_intent("commit tomemory")


def test_japanese_phrases_match_without_word_boundaries() -> None:
    assert detect_long_term_intent("明日これ覚えてね")


def test_empty_and_unrelated_messages_do_not_trigger() -> None:
    assert not detect_long_term_intent("")
    assert not detect_long_term_intent("what's the weather")
