"""Post-turn capture: keep the channel's last lines and count the turn (reference §8).

This is the per-turn write path, so it does the least work it can: the
message list is cleaned once, and every row of the turn (each persona's live
row and, in a guild, the triggering user's copy) goes to the database in a
single ``capture`` call, one transaction. The counter is incremented in SQL on
the live row only; the value returned is the one the database holds.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from stm_core._util.fast_attrs import unchecked_maker
from stm_core.errors import StmError, StorageError, UnattributedLineWarning, ValidationError
from stm_core.models import (
    CrudeMessage,
    HistoryMessage,
    PersonaResponse,
    RecordResult,
    Turn,
    crude_line,
)
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.text.memo import TextMemo
from stm_core.text.truncation import LINE_TRUNCATION_MARK, cut

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

log = logging.getLogger("stm.record")

_TRAILING_BLANKS = re.compile(r"[ \t]+\n")
_EXTRA_BLANK_LINES = re.compile(r"\n{3,}")
#: ``CaptureWrite(...)``: two per turn (see stm_core._util.fast_attrs).
_make_capture = unchecked_maker(CaptureWrite)


def clean_content(text: str, annotations: re.Pattern[str] | None,
                  max_length: int | None = None) -> str:
    """Strip turn-ephemeral annotations and the whitespace they leave behind:
    spaces and tabs before a newline, more than one blank line, the ends;
    then cut to ``max_length`` characters, marked. Each step runs only when
    the text needs it, so the usual short line costs one strip."""
    if annotations is not None and "[" in text:
        text = annotations.sub("", text)
    if "\n" in text:
        text = _EXTRA_BLANK_LINES.sub("\n\n", _TRAILING_BLANKS.sub("\n", text))
    text = text.strip()
    if max_length is not None:
        text = cut(text, max_length, LINE_TRUNCATION_MARK)
    return text


class CleanedLines:
    """What :func:`clean_content` made of each line text seen lately.

    A channel's window moves by a line or two a turn, so most of the lines a
    turn stores were cleaned on the turns before. Valid for one annotation
    pattern and one length limit (a change of either starts over); bounded
    by entries and by characters (:class:`~stm_core.text.memo.TextMemo`),
    it starts over when full.
    """

    def __init__(self) -> None:
        self._memo: tuple[tuple[re.Pattern[str] | None, int | None], TextMemo[str, str]] = (
            (None, None), TextMemo())

    def for_turn(self, annotations: re.Pattern[str] | None,
                 max_length: int | None) -> TextMemo[str, str]:
        """The memo to use with ``annotations`` and ``max_length``. The pair is
        replaced as one object, so stores in other threads never share a memo
        made for other settings."""
        made_with, cleaned = self._memo
        if made_with != (annotations, max_length) or cleaned.full():
            cleaned = TextMemo()
            self._memo = ((annotations, max_length), cleaned)
        return cleaned


#: One per process: the texts are the same whatever store records them.
_cleaned_lines = CleanedLines()


def crude_messages(history: Sequence[HistoryMessage], responses: Sequence[PersonaResponse],
                   *, annotations: re.Pattern[str] | None, now_ms: int,
                   keep: int, max_length: int | None = None) -> tuple[CrudeMessage, ...]:
    """The channel's stored lines after this turn: the history's user and
    persona messages, then this turn's replies, cleaned, last ``keep`` only,
    each cut to ``max_length`` characters.

    Walks from the newest message back and stops once ``keep`` lines are
    found, so a long history window costs no more than a short one.
    """
    cleaned = _cleaned_lines.for_turn(annotations, max_length)
    newest_first: list[CrudeMessage] = []
    for response in reversed(responses):
        if len(newest_first) == keep:
            break
        text = response.content
        content = cleaned.get(text)
        if content is None:
            content = clean_content(text, annotations, max_length)
            cleaned.remember(text, content, len(text) + len(content))
        if content:
            newest_first.append(crude_line("model", content, response.persona_name, now_ms))
    for message in reversed(history):
        if len(newest_first) == keep:
            break
        author = message.author_type
        if author == "other":
            continue
        text = message.content
        content = cleaned.get(text)
        if content is None:
            content = clean_content(text, annotations, max_length)
            cleaned.remember(text, content, len(text) + len(content))
        if content:
            newest_first.append(crude_line("user" if author == "user" else "model", content,
                                           message.speaker_name, now_ms, message.author_id))
    newest_first.reverse()
    return tuple(newest_first)


def with_trigger_author(turn: Turn,
                        history: Sequence[HistoryMessage]) -> Sequence[HistoryMessage]:
    """``history`` with the line the host marked as the trigger
    (``is_trigger``) attributed to ``turn.user_id`` when the host passed no
    ``author_id`` for it.

    stm never guesses an author: a display name is not an identity, and the
    newest line of a window need not be the trigger (another user's message
    can arrive meanwhile). Only a marked user line is filled in, and never on
    an impersonation turn (the message there is not the impersonated user's).
    An ``author_id`` the host gave is kept as given. Every other line stays as
    the host passed it. Raises :class:`ValidationError` when more than one
    line is marked.
    """
    index = trigger_index(history)
    if index is None or turn.user_id is None or turn.is_user_impersonation:
        return history
    message = history[index]
    if message.author_type != "user" or message.author_id is not None:
        return history
    return [*history[:index], attrs.evolve(message, author_id=turn.user_id),
            *history[index + 1:]]


def trigger_index(history: Sequence[HistoryMessage]) -> int | None:
    """The position of the line marked ``is_trigger``, if any; more than one
    is a :class:`ValidationError`."""
    found = None
    for index, message in enumerate(history):
        if message.is_trigger:
            if found is not None:
                raise ValidationError(
                    f"history lines {found} and {index} are both marked is_trigger; a turn "
                    "has one triggering message", field="is_trigger",
                    allowed="is_trigger=True on at most one line of the window")
            found = index
    return found


_unattributed_warned = False


def check_authors(messages: Sequence[CrudeMessage], *, strict: bool) -> None:
    """Warn once per process (or, ``strict``, raise) when a user line about
    to be stored carries no author id: erasure could not find it."""
    global _unattributed_warned
    missing = sum(1 for m in messages if m.author_id is None and m.role == "user")
    if not missing:
        return
    consequence = ("without an author id; `stm user forget` and `stm user export` cannot "
                   "find such a line (pass HistoryMessage(author_id=...))")
    if strict:
        raise ValidationError(
            f"{missing} user line(s) of the history window have no author_id, refused "
            "because STM_REQUIRE_AUTHOR_IDS is on; a line stored "
            f"{consequence}", field="author_id", allowed="the user's id on every user line")
    if not _unattributed_warned:
        _unattributed_warned = True
        warnings.warn(f"stm stored a user line {consequence}; this warning is shown once "
                      "per process, STM_REQUIRE_AUTHOR_IDS=1 makes it an error",
                      UnattributedLineWarning, stacklevel=4)


def skip_reason(turn: Turn, history: Sequence[HistoryMessage],
                responses: Sequence[PersonaResponse], *, stop_response: bool,
                privacy_full: bool) -> str | None:
    """Why this turn is not recorded, or ``None``."""
    if stop_response:
        return "stop_response"
    if not history:
        return "empty_history"
    if privacy_full:
        return "privacy_full"
    if not responses:
        return "no_persona_responses"
    if not turn.channel_id:
        return "no_channel"
    if turn.server_id is None and not turn.user_id:
        return "no_user"  # a DM row is keyed by its user
    return None


def personas(responses: Sequence[PersonaResponse], turn: Turn) -> dict[str | None, str | None]:
    """Distinct persona ids, in reply order -> the lineage of their first reply.

    A reply that names no lineage takes the turn's: a row written without one
    would be invisible to every reader that has one. The turn's only reply
    that names no persona is the turn's persona's: counted under no persona,
    the nudge would never come for it. Among several replies stm cannot tell
    whose such a reply is; it is counted under no persona, with a warning
    (once per process).
    """
    lone = len(responses) == 1
    found: dict[str | None, str | None] = {}
    for response in responses:
        persona = response.persona_id or (turn.persona_id if lone else None)
        if persona is None and turn.persona_id is not None:
            warn_unnamed_persona(turn.persona_id)
        found.setdefault(persona, response.persona_lineage_id or turn.persona_lineage_id)
    return found


_unnamed_persona_warned = False


def warn_unnamed_persona(turn_persona: str) -> None:
    global _unnamed_persona_warned
    if _unnamed_persona_warned:
        return
    _unnamed_persona_warned = True
    warnings.warn(f"a turn of persona {turn_persona!r} recorded several persona replies, some "
                  "without persona_id: those are counted under no persona, so their "
                  "persona's nudge does not count them; pass PersonaResponse(persona_id=...) "
                  "on every reply (this warning is shown once per process)",
                  UserWarning, stacklevel=5)


async def record_turn(engine: Engine, turn: Turn, history: Sequence[HistoryMessage],
                      responses: Sequence[PersonaResponse], *, stop_response: bool,
                      privacy_full: bool) -> RecordResult:
    """Store the channel's last messages for each persona that replied and
    count the turn on the live row.

    Raises :class:`StorageError` when the database write fails; content
    problems never raise (empty messages are dropped), except a user line
    without an author id under ``require_author_ids`` and more than one line
    marked ``is_trigger`` (:class:`ValidationError`, nothing written).
    """
    history = with_trigger_author(turn, history)  # checks the marks, even on a skipped turn
    reason = skip_reason(turn, history, responses, stop_response=stop_response,
                         privacy_full=privacy_full)
    if reason is not None:
        return RecordResult(recorded=False, skipped_reason=reason)

    settings = engine.settings
    now_ms = engine.clock.now_ms()
    messages = crude_messages(history, responses,
                              annotations=engine.hooks.annotation_pattern(), now_ms=now_ms,
                              keep=settings.max_messages_per_channel,
                              max_length=settings.max_stored_line_length)
    check_authors(messages, strict=settings.require_author_ids)
    # No closure here: a turn waiting on its write keeps what it allocated
    # alive, and with many turns in flight every object counts towards the
    # garbage collector's next pass.
    rows_of_turn = {"messages": messages, "now_ms": now_ms,
                    "parent_channel_id": turn.parent_channel_id,
                    "crude_ttl_ms": settings.crude_ttl_ms,
                    "summary_ttl_ms": settings.summary_ttl_ms}
    writes: list[CaptureWrite] = []
    live_rows: dict[str, int] = {}  # persona id ("" for none) -> index of its live write
    server_id, user_id, channel_id = turn.server_id, turn.user_id, turn.channel_id
    for persona_id, lineage in personas(responses, turn).items():
        live_rows[persona_id or ""] = len(writes)
        if server_id is None:
            assert user_id is not None  # checked by skip_reason
            live = MemoryKey.user(user_id, channel_id, persona_id, None)
        else:
            live = MemoryKey.server(server_id, channel_id, persona_id)
        writes.append(_make_capture(key=live, counter_increment=1, persona_lineage_id=lineage,
                                    **rows_of_turn))
        if server_id is not None and user_id:  # the triggering user's copy
            writes.append(_make_capture(
                key=MemoryKey.user(user_id, channel_id, persona_id, server_id),
                counter_increment=0, persona_lineage_id=lineage, **rows_of_turn))

    try:
        rows = await engine.capture(writes)
    except StmError:
        raise
    except Exception as exc:
        raise StorageError(f"recording the turn of channel {turn.channel_id} failed: "
                           f"{exc}") from exc
    counters = {}  # a loop, not a comprehension: that would keep ``rows`` in a cell
    for persona, index in live_rows.items():
        counters[persona] = rows[index].turns_since_refresh
    return RecordResult(recorded=True, counters=counters)
