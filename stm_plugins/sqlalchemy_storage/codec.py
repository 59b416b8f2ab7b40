"""Records to statement parameters and driver rows back to records.

Rows arrive as tuples (``sqlite3``) or ``asyncpg.Record`` objects, in the
column orders of :mod:`.schema`; both are read by position. SQLite hands
booleans back as 0/1, so they are converted here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from stm_core._util.fast_attrs import unchecked_maker
from stm_core.errors import ValidationError
from stm_core.models import CrudeMessage, crude_line
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    MemoryWrite,
    RevisionNote,
    ServerSettings,
    UserPrefs,
    memory_key,
)
from stm_core.storage.validation import channel_id_set
from stm_core.text.memo import TextMemo

# Compact, UTF-8 kept as is; built once (json.dumps with options builds one per call).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_decode = json.JSONDecoder().decode
#: A string as a JSON string literal, non-ASCII kept (what ``_encode`` does to strings).
_quote: Callable[[str], str] = encode_basestring

Row = Sequence[Any]

#: Fields of a ``MemoryFilter``, in the order filters are keyed.
FILTER_FIELDS: tuple[str, ...] = ("channel_id", "user_id", "server_id", "scope_kind",
                                  "persona_id")
#: A filter's scope is written into its statement, not bound: the indexes of
#: one scope's rows (schema version 4) serve only a statement that names the
#: scope. ``scope_kind=user`` stands for the field with that value.
SCOPE_LITERALS: tuple[str, ...] = ("scope_kind=server", "scope_kind=user")


def filter_params(fields: dict[str, object]) -> tuple[tuple[str, ...], dict[str, object]]:
    """A filter's statement key (its fields, the scope as its literal) and the
    parameters to bind. A scope that is neither of the two stays bound (it
    matches no row: the table's check allows only those)."""
    scope = fields.get("scope_kind")
    literal = f"scope_kind={scope}"
    if literal not in SCOPE_LITERALS:
        return tuple(fields), fields
    params = {f: v for f, v in fields.items() if f != "scope_kind"}
    return tuple(literal if f == "scope_kind" else f for f in fields), params


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


# -- text the drivers cannot store ----------------------------------------------------
def clean_text(text: str) -> str:
    """Text as it can be stored: unpaired surrogates (not encodable as UTF-8)
    and NUL (refused by PostgreSQL) become U+FFFD. Everything else is kept."""
    if "\x00" in text:
        text = text.replace("\x00", REPLACEMENT)
    if not text.isascii():
        text = _SURROGATE.sub(REPLACEMENT, text)
    return text


def _clean_optional(text: str | None) -> str | None:
    return None if text is None else clean_text(text)


def _utf8_encodable(text: str) -> bool:
    """No lone surrogate in ``text`` (strict UTF-8 refuses exactly those): the
    encoder finds out about four times faster than a search with the pattern."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_messages(messages: tuple[CrudeMessage, ...]) -> tuple[CrudeMessage, ...]:
    """``messages`` itself when every text can be stored (the usual case)."""
    # One look at all the texts together: this runs on every turn.
    texts = [m.content for m in messages]
    texts += [m.speaker_name for m in messages if m.speaker_name is not None]
    texts += [m.author_id for m in messages if m.author_id is not None]
    joined = "".join(texts)
    if "\x00" not in joined and (joined.isascii() or _utf8_encodable(joined)):
        return messages
    return tuple(CrudeMessage(role=m.role, content=clean_text(m.content),
                              speaker_name=_clean_optional(m.speaker_name),
                              timestamp_ms=m.timestamp_ms,
                              author_id=_clean_optional(m.author_id)) for m in messages)


# -- JSON columns -------------------------------------------------------------------
#: Key of a line's author id in the stored JSON.
AUTHOR_FIELD = "author_id"


def _message_fields(m: CrudeMessage) -> dict[str, Any]:
    fields = {"role": m.role, "content": m.content, "speaker_name": m.speaker_name,
              "timestamp_ms": m.timestamp_ms}
    if m.author_id is not None:  # absent, not null: rows stay as small as before
        fields[AUTHOR_FIELD] = m.author_id
    return fields


def encode_messages(messages: Sequence[CrudeMessage]) -> str:
    """The stored JSON of a message list, exactly as ``_encode`` writes it.

    This runs on every turn: each line is written straight from its fields
    (strings escaped by the json module's own C function) in one loop,
    instead of through a dict per line and the general encoder, about twice
    as fast. A line's text around its timestamp is remembered (a channel
    stores mostly the lines of its previous turns again). A field of an
    unexpected type takes the general encoder."""
    if not messages:
        return "[]"
    pieces = _LINE_PIECES
    if pieces.full():
        pieces.clear()
    lines = []
    for m in messages:
        at = m.timestamp_ms
        if type(at) is not int:  # a bool or a float is written differently
            return _encode([_message_fields(m) for m in messages])
        try:
            fields = (m.role, m.content, m.speaker_name, m.author_id)
            around = pieces.get(fields)
            if around is None:
                around = _line_pieces(*fields)
                pieces.remember(fields, around, len(m.content) + len(around[0]) + len(around[1]))
        except TypeError:  # a field that is not a string
            return _encode([_message_fields(m) for m in messages])
        lines.append(f"{around[0]}{at}{around[1]}")
    return "[" + ",".join(lines) + "]"


def _line_pieces(role: str, content: str, speaker: str | None,
                 author: str | None) -> tuple[str, str]:
    """A line's JSON before and after its timestamp."""
    quote = _quote
    head = (f'{{"role":{_ROLES.get(role) or quote(role)},"content":{quote(content)},'
            f'"speaker_name":{"null" if speaker is None else quote(speaker)},"timestamp_ms":')
    return head, ("}" if author is None else f',"{AUTHOR_FIELD}":{quote(author)}}}')


#: The two roles as JSON strings (escaping them again on every line is work).
_ROLES = {"user": '"user"', "model": '"model"'}
#: (role, content, speaker, author) -> the line's JSON around its timestamp.
#: Bounded by entries and by characters (the host's texts can be long).
_LINE_PIECES: TextMemo[tuple[str, str, str | None, str | None], tuple[str, str]] = TextMemo()


def decode_messages(text: str) -> tuple[CrudeMessage, ...]:
    if text == "[]":
        return ()
    # Lines stored before authors were kept have no author field.
    return tuple(crude_line(m["role"], m["content"], m.get("speaker_name"),
                            m["timestamp_ms"], m.get(AUTHOR_FIELD))
                 for m in _decode(text))


def author_pattern(author_id: str) -> str:
    """A ``LIKE`` pattern (escape character ``\\``) matching the stored JSON of
    any message list holding a line by ``author_id``. It may match more (the
    text could appear inside a line's content); callers check the decoded lines."""
    needle = _encode({AUTHOR_FIELD: clean_text(author_id)})[1:-1]
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def mention_patterns(terms: Sequence[str]) -> list[str]:
    """``LIKE`` patterns (escape character ``\\``, matched ignoring case) for
    text holding one of ``terms``: each as written, all lower case, all upper
    case and capitalised, plain and as it reads inside stored JSON (category
    and line texts), without those that hold a shorter one (it finds their
    rows too)."""
    needles: set[str] = set()
    for term in terms:
        term = clean_text(term.strip())
        for variant in (term, term.lower(), term.upper(), term.title(), term.casefold()):
            needles.update((variant, _quote(variant)[1:-1]))
    needles.discard("")
    kept: list[str] = []
    for needle in sorted(needles, key=lambda n: (len(n), n)):
        # Compared as SQLite compares them: only ASCII letters fold.
        if not any(_ascii_lower(k) in _ascii_lower(needle) for k in kept):
            kept.append(needle)
    return ["%" + n.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for n in kept]


def encode_categories(values: Mapping[str, str]) -> str:
    return _encode({clean_text(k): clean_text(v) for k, v in values.items()}) if values else "{}"


def decode_categories(text: str) -> dict[str, str]:
    return {} if text == "{}" else dict(_decode(text))


# -- memory rows ----------------------------------------------------------------------
def key_params(key: MemoryKey) -> dict[str, Any]:
    return {"scope_kind": key.scope_kind, "server_id": key.server_id, "user_id": key.user_id,
            "channel_id": key.channel_id, "persona_id": key.persona_id}


def capture_params(w: CaptureWrite, messages_json: str) -> dict[str, Any]:
    k = w.key
    return {"scope_kind": k.scope_kind, "server_id": k.server_id, "user_id": k.user_id,
            "channel_id": k.channel_id, "persona_id": k.persona_id,
            "parent_channel_id": w.parent_channel_id,
            "persona_lineage_id": w.persona_lineage_id,
            "messages": messages_json, "inc": w.counter_increment, "now": w.now_ms,
            "crude_ttl": w.crude_ttl_ms, "summary_ttl": w.summary_ttl_ms}


def write_params(w: MemoryWrite) -> dict[str, Any]:
    k = w.key
    return {"scope_kind": k.scope_kind, "server_id": k.server_id, "user_id": k.user_id,
            "channel_id": k.channel_id, "persona_id": k.persona_id,
            "parent_channel_id": w.parent_channel_id,
            "persona_lineage_id": w.persona_lineage_id,
            "summary": _clean_optional(w.summary) if w.set_summary else None,
            "categories": encode_categories(w.categories) if w.set_categories else "{}",
            "set_summary": int(w.set_summary), "set_categories": int(w.set_categories),
            "clear_messages": int(w.clear_messages), "reset": int(w.reset_counter),
            "now": w.now_ms, "crude_ttl": w.crude_ttl_ms, "summary_ttl": w.summary_ttl_ms}


def key_from_row(r: Row) -> MemoryKey:
    # The key object a turn asks for again (MemoryKey.server/.user hand out the
    # same one), so the cache finds a loaded row by identity.
    return memory_key((r[0], r[1], r[2], r[3], r[4]))


#: ``MemoryRecord(...)`` for rows: every write returns its rows (see stm_core._util.fast_attrs).
_make_record = unchecked_maker(MemoryRecord)


def memory_from_row(r: Row, *, key: MemoryKey | None = None,
                    sent_messages: tuple[str, tuple[CrudeMessage, ...]] | None = None
                    ) -> MemoryRecord:
    """A record from a row. ``key`` and ``sent_messages`` (the JSON just written
    and the messages it encodes) let a write skip rebuilding what it sent."""
    text = r[9]
    if sent_messages is not None and text == sent_messages[0]:
        messages = sent_messages[1]
    else:
        messages = decode_messages(text)
    return _make_record(
        key=key if key is not None else key_from_row(r),
        parent_channel_id=r[5], persona_lineage_id=r[6], summary=r[7],
        categories=decode_categories(r[8]), messages=messages,
        turns_since_refresh=r[10], last_refreshed_turn=r[11], updated_at_ms=r[12], rev=r[13])


# -- revisions ------------------------------------------------------------------------
def revision_params(key: MemoryKey, note: RevisionNote, now_ms: int) -> dict[str, Any]:
    return {**key_params(key), "author": note.author, "actor": _clean_optional(note.actor),
            "restored_from": note.restored_from, "now": now_ms, "keep": note.keep}


def revision_from_row(key: MemoryKey, r: Row) -> MemoryRevision:
    return MemoryRevision(key=key, rev=r[0], summary=r[1], categories=decode_categories(r[2]),
                          author=r[3], actor=r[4], restored_from=r[5], written_at_ms=r[6])


# -- server settings ----------------------------------------------------------------
def _int_or_none(name: str, value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValidationError(f"{name} must be a whole number or None, got {value!r}", field=name)


def _str_or_none(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return _clean_optional(value)
    raise ValidationError(f"{name} must be text or None, got {value!r}", field=name)


def _bool_or_none(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValidationError(f"{name} must be true, false or None, got {value!r}", field=name)


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise ValidationError(f"{name} must be true or false, got {value!r}", field=name)


def encode_ids(ids: frozenset[str]) -> str:
    """The stored form of a set of ids: a sorted JSON array."""
    return _encode(sorted(ids))


def _channel_ids(name: str, value: object) -> str:
    return encode_ids(channel_id_set(name, value))


_SETTING_ENCODERS: dict[str, Callable[[str, object], object]] = {
    "refresh_cadence": _int_or_none,
    "render_mode": _str_or_none,
    "crude_message_count": _int_or_none,
    "nudge_injection_depth": _int_or_none,
    "content_injection_depth": _int_or_none,
    "tool_description_override": _str_or_none,
    "update_nudge_override": _str_or_none,
    "stm_enabled": _bool_or_none,
    "private_channel_ids": _channel_ids,
    "privacy_bypass": _bool,
    "cache_policy": _str_or_none,
    "prompt_budget_tokens": _int_or_none,
}


def setting_params(changes: Mapping[str, object]) -> dict[str, object]:
    """Column values for the given settings (names already checked)."""
    return {name: _SETTING_ENCODERS[name](name, value) for name, value in changes.items()}


def settings_from_rows(server_id: str, row: Row | None,
                       category_rows: Iterable[Row]) -> ServerSettings:
    cats = tuple(CategoryRecord(position=c[0], label=c[1], description=c[2])
                 for c in category_rows)
    if row is None:
        return ServerSettings(server_id=server_id, categories=cats)
    return ServerSettings(
        server_id=row[0], refresh_cadence=row[1], render_mode=row[2],
        crude_message_count=row[3], nudge_injection_depth=row[4],
        content_injection_depth=row[5], tool_description_override=row[6],
        update_nudge_override=row[7],
        stm_enabled=None if row[8] is None else bool(row[8]),
        private_channel_ids=frozenset(_decode(row[9])), privacy_bypass=bool(row[10]),
        categories=cats, updated_at_ms=row[11], cache_policy=row[12],
        prompt_budget_tokens=row[13])


def category_params(server_id: str, c: CategoryRecord) -> dict[str, object]:
    return {"server_id": server_id, "position": c.position, "label": clean_text(c.label),
            "description": clean_text(c.description)}


def prefs_from_row(user_id: str, row: Row | None) -> UserPrefs:
    if row is None:
        return UserPrefs(user_id=user_id)
    return UserPrefs(user_id=row[0], crossserver_opt_in=bool(row[1]))
