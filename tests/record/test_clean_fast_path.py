"""What a turn stores is what the cleaning rules give, line for line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core._util.arguments import instances_of
from stm_core.errors import ValidationError
from stm_core.models import HistoryMessage, PersonaResponse
from stm_core.pipeline.record import clean_content, crude_messages

ANNOTATIONS = re.compile(r"\[img[^\]]*\]")
#: Whole annotations as well as their parts: random characters alone would
#: almost never spell one, and then the pattern would go untested.
TEXT = st.lists(st.sampled_from(["a", "b", " ", "x", "\n", "\t", "[", "]", "[img]",
                                 "[img x]", "[img"]), max_size=16).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.one_of(st.none(), st.integers(min_value=0, max_value=30)),
       st.booleans())
def test_stored_lines_are_the_cleaned_texts(text: str, limit: int | None,
                                            annotated: bool) -> None:
    pattern = ANNOTATIONS if annotated else None
    stored = crude_messages([HistoryMessage(author_type="user", content=text)],
                            [PersonaResponse(content=text, persona_name="Bot")],
                            annotations=pattern, now_ms=1, keep=10, max_length=limit)
    cleaned = clean_content(text, pattern, limit)
    assert [m.content for m in stored] == ([cleaned, cleaned] if cleaned else [])


def test_a_reply_loses_its_annotations_like_a_history_line() -> None:
    stored = crude_messages([HistoryMessage(author_type="user", content="see [img cat] here")],
                            [PersonaResponse(content="nice [img] one", persona_name="Bot")],
                            annotations=ANNOTATIONS, now_ms=1, keep=10)
    assert [m.content for m in stored] == ["see  here", "nice  one"]


def test_a_list_of_messages_passes_and_a_stray_dict_is_named_by_index() -> None:
    good = [HistoryMessage(author_type="user", content="hi")] * 3
    assert instances_of(good, HistoryMessage, "history", "...") is good
    with pytest.raises(ValidationError, match=r"history\[2\] must be a HistoryMessage"):
        instances_of([*good[:2], {"content": "hi"}], HistoryMessage, "history", "...")
