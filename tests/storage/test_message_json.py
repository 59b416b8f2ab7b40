"""The stored JSON of a message list is what the json module writes, byte for byte."""

from __future__ import annotations

import json

from stm_core.models import CrudeMessage
from stm_core.storage.records import MemoryKey
from stm_core.text import memo as text_memo
from stm_plugins.sqlalchemy_storage import codec
from stm_plugins.sqlalchemy_storage.base import SENT_MAX_CHARS, SentMessages
from tests.retained import retained_bytes


def reference(messages: tuple[CrudeMessage, ...]) -> str:
    """The general encoder over one dict per line (the format rows were written in)."""
    lines = []
    for m in messages:
        line: dict[str, object] = {"role": m.role, "content": m.content,
                                   "speaker_name": m.speaker_name,
                                   "timestamp_ms": m.timestamp_ms}
        if m.author_id is not None:
            line["author_id"] = m.author_id
        lines.append(line)
    return json.dumps(lines, ensure_ascii=False, separators=(",", ":"))


def test_lines_are_encoded_exactly_as_the_json_module_encodes_them() -> None:
    texts = ["plain", 'quote " and back\\slash', "tab\tnew\nline\r\x01\x1f", "é ü 漢字 🙂",
             "\u2028\u2029", "</script>", ""]
    messages = tuple(
        CrudeMessage(role="user" if i % 2 else "model", content=text,
                     speaker_name=None if i % 3 == 0 else f"Ann \"{i}\" é",
                     timestamp_ms=1_700_000_000_000 + i,
                     author_id=None if i % 2 else f"{i}\\x")
        for i, text in enumerate(texts))
    encoded = codec.encode_messages(messages)
    assert encoded == reference(messages)
    assert codec.decode_messages(encoded) == messages
    assert codec.encode_messages(()) == "[]"


def test_fields_of_unexpected_types_are_still_encoded_as_json_encodes_them() -> None:
    odd = (CrudeMessage(role="user", content="x", speaker_name=None,
                        timestamp_ms=True),  # type: ignore[arg-type]
           CrudeMessage(role="model", content="y", speaker_name=7,  # type: ignore[arg-type]
                        timestamp_ms=2))
    assert codec.encode_messages(odd) == reference(odd)


def test_a_line_seen_before_is_encoded_again_with_the_new_turns_time() -> None:
    first = (CrudeMessage(role="user", content="hi", speaker_name="Ann", timestamp_ms=1,
                          author_id="7"),
             CrudeMessage(role="model", content="hello", speaker_name="Bot", timestamp_ms=1))
    later = tuple(CrudeMessage(role=m.role, content=m.content, speaker_name=m.speaker_name,
                               timestamp_ms=2_000, author_id=m.author_id) for m in first)
    assert codec.encode_messages(first) == reference(first)
    assert codec.encode_messages(later) == reference(later)
    # Another author or speaker on the same text is another line.
    other = (CrudeMessage(role="user", content="hi", speaker_name="Bea", timestamp_ms=3,
                          author_id="8"),)
    assert codec.encode_messages(other) == reference(other)


def test_an_unhashable_field_takes_the_general_encoder() -> None:
    odd = (CrudeMessage(role="user", content=["a", "list"],  # type: ignore[arg-type]
                        speaker_name=None, timestamp_ms=1),)
    assert codec.encode_messages(odd) == reference(odd)


def test_the_remembered_lines_stay_bounded() -> None:
    for n in range(text_memo.MAX_ENTRIES + 10):
        line = (CrudeMessage(role="user", content=f"line {n}", speaker_name=None,
                             timestamp_ms=n),)
        assert codec.encode_messages(line) == reference(line)
    assert len(codec._LINE_PIECES) <= text_memo.MAX_ENTRIES


def test_long_lines_do_not_pin_memory() -> None:
    # 300 distinct lines of 100,000 characters: 30 MB if each were remembered.
    def encode_many() -> None:
        for n in range(300):
            line = (CrudeMessage(role="user", content=f"{n:03}" + "x" * 100_000,
                                 speaker_name=None, timestamp_ms=n),)
            assert codec.encode_messages(line).startswith('[{"role":"user"')

    held = retained_bytes(encode_many)
    assert held < 3 * text_memo.MAX_CHARS, held


def test_the_messages_each_row_was_sent_with_do_not_pin_memory() -> None:
    # 300 rows written with 200,000 characters of JSON each: 60 MB if kept.
    sent = SentMessages()

    def write_many() -> None:
        for n in range(300):
            text = f'[{{"n":{n:03}}}' + " " * 200_000 + "]"
            sent.remember(MemoryKey.server("9", str(n), None), (text, ()))

    held = retained_bytes(write_many)
    assert held < SENT_MAX_CHARS + text_memo.MAX_CHARS, held
    last = MemoryKey.server("9", "299", None)
    got = sent.get(last)
    assert got is not None and got[0].startswith('[{"n":299}')


def test_a_row_written_again_and_again_keeps_its_entry() -> None:
    # One row per turn, each turn 2,000 characters of JSON: the memo holds one
    # entry, and counting each write anew emptied it every 500 turns.
    sent = SentMessages()
    quiet, busy = MemoryKey.server("9", "quiet", None), MemoryKey.server("9", "busy", None)
    sent.remember(quiet, ('[{"n":"quiet"}]', ()))
    for n in range(2_000):
        sent.remember(busy, (f'[{{"n":{n:04}}}' + " " * 2_000 + "]", ()))
        got = sent.get(busy)
        assert got is not None and got[0].startswith(f'[{{"n":{n:04}}}')
    # Two entries of a few kilobytes: nothing made the memo start over.
    assert sent.get(quiet) == ('[{"n":"quiet"}]', ())


def test_a_busy_hosts_rows_written_in_turn_all_keep_their_entries() -> None:
    # 600 active rows of six 300-character lines, written round and round: a
    # tool write on any of them finds the lines it sent (a memo that started
    # over at a million characters lost them every few hundred writes).
    sent = SentMessages()
    keys = [MemoryKey.server("9", f"c{n}", None) for n in range(600)]
    for turn in range(3):
        for n, key in enumerate(keys):
            sent.remember(key, (f'[{{"turn":{turn},"n":{n:03}}}' + " " * 2_200 + "]", ()))
    assert all((got := sent.get(key)) is not None and got[0].startswith(f'[{{"turn":2,"n":{n:03}}}')
               for n, key in enumerate(keys))


def test_clean_messages_keeps_emoji_lines_as_they_are_and_replaces_lone_surrogates() -> None:
    fine = (CrudeMessage(role="user", content="héllo 🎉", speaker_name="Zoë", timestamp_ms=1),
            CrudeMessage(role="model", content="ok", speaker_name=None, timestamp_ms=2))
    assert codec.clean_messages(fine) is fine
    broken = (CrudeMessage(role="user", content="🎉 \ud83d half", speaker_name="Zoë",
                           timestamp_ms=1),
              CrudeMessage(role="model", content="ok", speaker_name="\udfff",
                           timestamp_ms=2))
    cleaned = codec.clean_messages(broken)
    assert [m.content for m in cleaned] == ["🎉 \ufffd half", "ok"]
    assert [m.speaker_name for m in cleaned] == ["Zoë", "\ufffd"]
    assert codec.encode_messages(cleaned).encode("utf-8")
