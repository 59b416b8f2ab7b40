"""The record path's shortcuts make the very objects and texts of the long way."""

from __future__ import annotations

import re
import threading

import attrs

from stm_core.models import CrudeMessage, HistoryMessage, PersonaResponse, crude_line
from stm_core.pipeline.record import CleanedLines, clean_content, crude_messages
from stm_core.text import memo as text_memo
from tests.retained import retained_bytes


def test_crude_line_is_the_object_the_constructor_makes() -> None:
    made = crude_line("user", "hi", "Ann", 5, "42")
    assert made == CrudeMessage(role="user", content="hi", speaker_name="Ann",
                                timestamp_ms=5, author_id="42")
    assert type(made) is CrudeMessage
    assert crude_line("model", "x", None, 1) == CrudeMessage(role="model", content="x",
                                                            speaker_name=None, timestamp_ms=1)
    assert hash(made) == hash(CrudeMessage(role="user", content="hi", speaker_name="Ann",
                                           timestamp_ms=5, author_id="42"))


def test_crude_line_sets_every_field_and_the_class_checks_nothing_it_would_skip() -> None:
    # The shortcut is only the same object while the class runs nothing in __init__.
    fields = attrs.fields(CrudeMessage)
    assert [f.name for f in fields] == ["role", "content", "speaker_name", "timestamp_ms",
                                        "author_id"]
    assert all(f.validator is None and f.converter is None for f in fields)
    assert not hasattr(CrudeMessage, "__attrs_post_init__")
    assert not hasattr(CrudeMessage, "__attrs_pre_init__")


def window(*texts: str) -> tuple[HistoryMessage, ...]:
    return tuple(HistoryMessage(author_type="user", content=t, speaker_name="Ann")
                 for t in texts)


REPLY = (PersonaResponse(content="ok", persona_name="Bot"),)


def test_a_text_cleaned_under_one_pattern_is_cleaned_again_under_another() -> None:
    text = "hello [note]  \n\n\n\nworld"
    ann = re.compile(r"\[note\]")
    first = crude_messages(window(text), REPLY, annotations=None, now_ms=1, keep=10)
    second = crude_messages(window(text), REPLY, annotations=ann, now_ms=2, keep=10)
    cut = crude_messages(window(text), REPLY, annotations=ann, now_ms=3, keep=10,
                         max_length=5)
    assert first[0].content == clean_content(text, None)
    assert second[0].content == clean_content(text, ann)
    assert cut[0].content == clean_content(text, ann, 5)
    assert len({first[0].content, second[0].content, cut[0].content}) == 3
    # And back: the first pattern's result again, not the last one's.
    again = crude_messages(window(text), REPLY, annotations=None, now_ms=4, keep=10)
    assert again[0].content == first[0].content


def test_the_memo_is_bounded_and_each_caller_gets_one_made_for_its_settings() -> None:
    lines = CleanedLines()
    memo = lines.for_turn(None, None)
    for n in range(text_memo.MAX_ENTRIES):
        memo.remember(str(n), str(n), 2)
    fresh = lines.for_turn(None, None)
    assert fresh is not memo and not fresh
    pattern = re.compile("x")
    assert lines.for_turn(pattern, None) is not fresh
    assert lines.for_turn(pattern, None) is lines.for_turn(pattern, None)


def test_long_texts_do_not_pin_memory() -> None:
    # 300 distinct history texts of 100,000 characters (stored cut to 1,000):
    # 30 MB if each were remembered.
    def record_many() -> None:
        for n in range(300):
            stored = crude_messages(window(f"{n:03}" + "x" * 100_000), REPLY,
                                    annotations=None, now_ms=n, keep=10, max_length=1000)
            assert len(stored[0].content) == 1000

    held = retained_bytes(record_many)
    assert held < 3 * text_memo.MAX_CHARS, held


def test_a_full_memo_keeps_nothing_more_and_one_huge_text_never_fills_it() -> None:
    memo: text_memo.TextMemo[str, str] = text_memo.TextMemo(max_entries=3, max_chars=100)
    memo.remember("huge", "x", 101)
    assert memo == {} and not memo.full()
    memo.remember("a", "1", 60)
    memo.remember("b", "2", 60)
    assert memo.full() and memo.chars == 120
    memo.remember("c", "3", 1)
    assert "c" not in memo
    memo.clear()
    assert memo.chars == 0 and not memo.full()


def test_an_entry_remembered_again_replaces_the_old_one_in_the_count() -> None:
    memo: text_memo.TextMemo[str, str] = text_memo.TextMemo(max_entries=3, max_chars=100)
    for n in range(50):  # one key written on every turn
        memo.remember("row", f"v{n}", 40)
    assert memo == {"row": "v49"} and memo.chars == 40 and not memo.full()
    memo.remember("other", "o", 30)
    memo.remember("row", "grown", 65)
    assert memo == {"other": "o", "row": "grown"} and memo.chars == 95
    memo.remember("row", "huge", 101)  # over the limit alone: the stale entry goes too
    assert memo == {"other": "o"} and memo.chars == 30
    memo.clear()
    memo.remember("row", "again", 10)
    assert memo == {"row": "again"} and memo.chars == 10


def test_stores_in_other_threads_with_other_settings_never_mix_their_lines() -> None:
    text = "keep [tag] this"
    patterns = [None, re.compile(r"\[tag\]")]
    wrong: list[str] = []

    def record_many(pattern: re.Pattern[str] | None) -> None:
        expected = clean_content(text, pattern)
        for n in range(3000):
            got = crude_messages(window(text, f"{n}"), REPLY, annotations=pattern,
                                 now_ms=n, keep=10)[0].content
            if got != expected:
                wrong.append(got)

    threads = [threading.Thread(target=record_many, args=(p,)) for p in patterns * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
