"""What a turn stores is what the cleaning rules give, line for line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core.arguments import instances_of
from stm_core.errors import ValidationError
from stm_core.models import HistoryMessage, PersonaResponse
from stm_core.record import clean_content, crude_messages

ANNOTATIONS = re.compile(r"\[img[^\]]*\]")
TEXT = st.text(alphabet=st.sampled_from(list("ab [img]\n\t x")), max_size=40)


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


def test_a_list_of_messages_passes_and_a_stray_dict_is_named_by_index() -> None:
    good = [HistoryMessage(author_type="user", content="hi")] * 3
    assert instances_of(good, HistoryMessage, "history", "...") is good
    with pytest.raises(ValidationError, match=r"history\[2\] must be a HistoryMessage"):
        instances_of([*good[:2], {"content": "hi"}], HistoryMessage, "history", "...")
