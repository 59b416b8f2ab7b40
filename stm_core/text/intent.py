"""Does the user ask for a long-term memory action? (reference §3.1)

When the latest user message says "remember this", "don't forget", "覚えておいて"
and the like, the STM tool and its nudge stand back so the model reaches for its
long-term memory tools instead. A host computes this once per turn and sets
``Turn.explicit_long_term_intent``.

Matching is on the NFKC-normalised, lower-cased, whitespace-collapsed text.
English phrases match whole words only (DESIGN decision 9: "notebook" does not
trigger "note", "remembered" does not trigger "remember"); Japanese phrases, which
have no word spaces, match anywhere.
"""

from __future__ import annotations

import re
import unicodedata

ENGLISH_PHRASES: tuple[str, ...] = (
    "remember",
    "don't forget",
    "note",
    "commit to memory",
    "for future conversations",
    "for future reference",
)

JAPANESE_PHRASES: tuple[str, ...] = (
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

_WHITESPACE = re.compile(r"\s+")
# Word edges are ASCII letters and digits, so "remember" inside Japanese text
# ("rememberしてね") still counts as a whole word.
_ENGLISH = re.compile(
    r"(?<![a-z0-9_])(?:" + "|".join(re.escape(p) for p in ENGLISH_PHRASES) + r")(?![a-z0-9_])")
# Phones type the typographic apostrophe; "don’t forget" means the same thing.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def normalize_message(text: str) -> str:
    """NFKC, lower case, straight apostrophes, single spaces, trimmed."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_APOSTROPHES)
    return _WHITESPACE.sub(" ", text).strip()


def detect_long_term_intent(latest_user_message: str) -> bool:
    """Whether the message asks to remember something for the long term."""
    if not latest_user_message:
        return False
    text = normalize_message(latest_user_message)
    if _ENGLISH.search(text):
        return True
    return any(phrase in text for phrase in JAPANESE_PHRASES)
