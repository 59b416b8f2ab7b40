"""A user's privacy requests: forget everything of them, or export it.

What belongs to a user: their own (user-scope) rows in every server and DM,
every stored line whose author id is theirs (in server rows and in other
users' copies), their preferences (the cross-server opt-in), and the memory
that names them (:mod:`stm_core.admin.mentions`): other people's lines, and
summaries and category texts, current or in a kept revision, that name them.
Forgetting removes the lines that name them, and clears a memory that names
them (its summary, categories and whole revision history): rewording a
model's paraphrase cannot be made safe, and a short-term memory is rebuilt by
the next turns.

Lines stored without an author id (before authors were kept, or from a host
that does not pass them) cannot be attributed; they age out with the crude
TTL and the janitor. Both requests count those lines in the rows of the
channels where the user had a row, a line or a mention, so the operator knows
what could not be checked (docs/privacy.md says what to do about them).

Forgetting changes one row per transaction. A shared row is rewritten only if
nobody wrote it since it was read (its ``rev``); otherwise it is read again
and retried, so a concurrent ``record_turn`` never loses its lines and never
brings the forgotten ones back. The user's own rows go last, and rows holding
their lines after the rows that only name them: a forget interrupted half-way
still finds the user's names when run again. The store's cache is updated
from what each transaction committed, and adapters shared by several
processes announce each change to the others.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import attrs

from stm_core.admin.mentions import Matcher, SearchTerms, search_terms, searchable
from stm_core.admin.values import key_to_dict, line_to_dict
from stm_core.errors import StorageError, ValidationError
from stm_core.models import CrudeMessage
from stm_core.storage.records import (
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    UserPrefs,
)

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

log = logging.getLogger("stm.admin")

#: Rewrites of one row that lost to concurrent writers before giving up.
MAX_ATTEMPTS_PER_ROW = 50
#: Scans for lines written by concurrent writers while forgetting.
MAX_SCANS = 5
#: What forget does with a memory that names the user (``--json``: ``mentions.action``).
MENTIONS_ACTION: Literal["cleared"] = "cleared"


@attrs.frozen(kw_only=True)
class ForgetResult:
    """What ``forget_user`` removed (or, with ``dry_run``, would remove)."""

    user_id: str
    dry_run: bool
    #: The user's own rows, deleted whole (with their kept revisions).
    rows_removed: tuple[MemoryKey, ...]
    #: Other rows the user's lines, or lines or memory naming them, were taken out of.
    rows_changed: tuple[MemoryKey, ...]
    #: The user's own lines taken out of other rows.
    lines_removed: int
    #: Whether stored preferences (the cross-server opt-in) were deleted.
    preferences_removed: bool
    #: Rows of the user's channels holding user lines without an author id,
    #: which could not be checked (see :func:`unchecked_lines`).
    unchecked_rows: tuple[MemoryKey, ...] = ()
    unchecked_lines: int = 0
    #: The names, id and mention forms searched for.
    searched_for: SearchTerms | None = None
    #: Rows whose summary and categories named the user, now or in a kept
    #: revision: cleared, with their whole revision history.
    memories_cleared: tuple[MemoryKey, ...] = ()
    #: Lines of other people (or of the persona) that named the user, removed.
    mention_lines_removed: int = 0

    def to_dict(self) -> dict[str, Any]:
        searched = self.searched_for or SearchTerms(user_id=self.user_id, names=())
        return {"user_id": self.user_id, "dry_run": self.dry_run,
                "rows_removed": [key_to_dict(k) for k in self.rows_removed],
                "rows_changed": [key_to_dict(k) for k in self.rows_changed],
                "lines_removed": self.lines_removed,
                "preferences_removed": self.preferences_removed,
                "mentions": {"action": MENTIONS_ACTION,
                             "searched_for": searched.to_dict(),
                             "memories_cleared": [key_to_dict(k)
                                                  for k in self.memories_cleared],
                             "lines_removed": self.mention_lines_removed},
                "unchecked_lines": self.unchecked_lines,
                "unchecked_rows": [key_to_dict(k) for k in self.unchecked_rows]}


@attrs.frozen(kw_only=True)
class RowErasure:
    """What forgetting the user takes out of one row that is not theirs."""

    record: MemoryRecord
    #: The row's kept revisions when it was read.
    revisions: tuple[MemoryRevision, ...]
    #: The lines the row keeps.
    kept: tuple[CrudeMessage, ...]
    own_lines: int
    mention_lines: int
    #: The summary, categories and revision history go (they name the user).
    clear: bool

    @property
    def changes(self) -> bool:
        return self.clear or len(self.kept) != len(self.record.messages)


def is_own(key: MemoryKey, user_id: str) -> bool:
    return key.scope_kind == "user" and key.user_id == user_id


def own_filter(user_id: str) -> MemoryFilter:
    return MemoryFilter(user_id=user_id, scope_kind="user")


def is_unattributed(message: CrudeMessage) -> bool:
    """A user's line stored without an author id: nobody's erasure finds it."""
    return message.role == "user" and message.author_id is None


async def unchecked_lines(engine: Engine, user_id: str, keys: Iterable[MemoryKey]
                          ) -> tuple[tuple[MemoryKey, ...], int]:
    """The rows, other than the user's own, of the server channels of ``keys``
    (where the user had a row, a line or a mention) that hold user lines
    without an author id, and how many such lines they hold: the user may
    have written them, and no erasure can tell. Direct-message rows are the
    user's own."""
    rows: list[MemoryKey] = []
    lines = 0
    for server_id, channel_id in sorted({(k.server_id, k.channel_id) for k in keys
                                         if k.server_id is not None}):
        for record in await engine.list_memories(
                MemoryFilter(server_id=server_id, channel_id=channel_id)):
            count = sum(map(is_unattributed, record.messages))
            if count and not is_own(record.key, user_id):
                rows.append(record.key)
                lines += count
    return tuple(rows), lines


async def revisions_of(engine: Engine, key: MemoryKey) -> list[MemoryRevision]:
    return await engine.storage.kept_revisions(key)


def plan_row(record: MemoryRecord, revisions: Sequence[MemoryRevision],
             matcher: Matcher) -> RowErasure:
    user_id = matcher.terms.user_id
    kept: list[CrudeMessage] = []
    own = naming = 0
    for m in record.messages:
        if m.author_id == user_id:
            own += 1
        elif matcher.names(m.content):
            naming += 1
        else:
            kept.append(m)
    return RowErasure(record=record, revisions=tuple(revisions), kept=tuple(kept),
                      own_lines=own, mention_lines=naming,
                      clear=(matcher.in_content(record.summary, record.categories)
                             or bool(matcher.revisions(revisions))))


#: Names an operator may add to a request, and the length of each.
MAX_NAMES = 20
MAX_NAME_LENGTH = 100


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """The extra display names of a request, stripped; a blank one, more than
    :data:`MAX_NAMES` or one longer than :data:`MAX_NAME_LENGTH` characters
    is a :class:`ValidationError`."""
    given = tuple(n.strip() for n in names)
    allowed = (f"at most {MAX_NAMES} names of 1 to {MAX_NAME_LENGTH} characters, "
               "not blank")
    if len(given) > MAX_NAMES or any(not 0 < len(n) <= MAX_NAME_LENGTH for n in given):
        raise ValidationError(f"names must be {allowed}, got {list(given)!r}"[:300],
                              field="names", allowed=allowed)
    return given


class Search:
    """The rows forgetting a user changes, found afresh on each scan."""

    def __init__(self, engine: Engine, user_id: str, names: Sequence[str] = ()) -> None:
        self.engine = engine
        self.erasure = engine.storage.erasure()
        self.user_id = user_id
        self.names: dict[str, None] = dict.fromkeys(n for n in names if searchable(n))
        self.not_searched: dict[str, None] = dict.fromkeys(
            n for n in names if not searchable(n))

    @property
    def terms(self) -> SearchTerms:
        return SearchTerms(user_id=self.user_id, names=tuple(self.names),
                           names_not_searched=tuple(self.not_searched))

    async def own_rows(self) -> list[MemoryRecord]:
        return await self.engine.list_memories(own_filter(self.user_id))

    async def scan(self, own: Sequence[MemoryRecord]) -> list[RowErasure]:
        """Every other row with something to take out: those that only name
        the user first, those holding their lines last. The names seen on
        the user's lines so far (here or on an earlier scan) are searched."""
        authored = await self.erasure.rows_with_author(self.user_id)
        found = search_terms(self.user_id, [*own, *authored])
        self.names.update(dict.fromkeys(found.names))
        self.not_searched.update(dict.fromkeys(found.names_not_searched))
        matcher = Matcher(self.terms)
        candidates = {r.key: r for r in await self.erasure.rows_mentioning(self.terms.terms)}
        candidates.update((r.key, r) for r in authored)
        plans = []
        for record in candidates.values():
            if is_own(record.key, self.user_id):
                continue
            plan = plan_row(record, await revisions_of(self.engine, record.key), matcher)
            if plan.changes:
                plans.append(plan)
        return sorted(plans, key=lambda p: p.own_lines > 0)


async def forget_user(engine: Engine, user_id: str, *, dry_run: bool,
                      names: Sequence[str] = ()) -> ForgetResult:
    search = Search(engine, user_id, names)
    if dry_run:
        own = await search.own_rows()
        plans = await search.scan(own)
        prefs = await engine.read_prefs(user_id)
        unchecked, unchecked_count = await unchecked_lines(
            engine, user_id, [r.key for r in own] + [p.record.key for p in plans])
        return ForgetResult(
            user_id=user_id, dry_run=True, rows_removed=tuple(r.key for r in own),
            rows_changed=tuple(sorted((p.record.key for p in plans), key=attrs.astuple)),
            lines_removed=sum(p.own_lines for p in plans),
            preferences_removed=prefs != UserPrefs(user_id=user_id),
            unchecked_rows=unchecked, unchecked_lines=unchecked_count,
            searched_for=search.terms,
            memories_cleared=tuple(sorted((p.record.key for p in plans if p.clear),
                                          key=attrs.astuple)),
            mention_lines_removed=sum(p.mention_lines for p in plans))

    removed: dict[MemoryKey, None] = {}
    changed: dict[MemoryKey, None] = {}
    cleared: dict[MemoryKey, None] = {}
    lines = mention_lines = 0
    for _ in range(MAX_SCANS):  # again while concurrent writers add the user's lines
        own = await search.own_rows()
        plans = await search.scan(own)
        if not plans and not own:
            break
        for plan in plans:
            done = await _erase_row(engine, search, plan)
            if done is not None:
                changed[done.record.key] = None
                lines += done.own_lines
                mention_lines += done.mention_lines
                if done.clear:
                    cleared[done.record.key] = None
        # Last: their own rows hold the names a run interrupted before here needs.
        removed.update(dict.fromkeys(await engine.delete_memories(own_filter(user_id))))
    else:
        raise StorageError(f"user {user_id}'s lines are still being written (the host's "
                           "history windows still hold them); run forget again once they "
                           "are gone from the host")
    # Their view reloads with the default preferences.
    prefs_removed = await engine.erase_prefs(
        user_id, lambda: search.erasure.delete_user_prefs(user_id))
    unchecked, unchecked_count = await unchecked_lines(engine, user_id, [*removed, *changed])
    log.info("user %s forgotten: %d own rows, %d lines in %d other rows, preferences %s; "
             "%d memories and %d lines naming them cleared; "
             "%d lines without an author id in %d rows of their channels not checked",
             user_id, len(removed), lines, len(changed),
             "removed" if prefs_removed else "none stored", len(cleared), mention_lines,
             unchecked_count, len(unchecked))
    return ForgetResult(user_id=user_id, dry_run=False, rows_removed=tuple(removed),
                        rows_changed=tuple(changed), lines_removed=lines,
                        preferences_removed=prefs_removed, unchecked_rows=unchecked,
                        unchecked_lines=unchecked_count, searched_for=search.terms,
                        memories_cleared=tuple(cleared), mention_lines_removed=mention_lines)


async def _erase_row(engine: Engine, search: Search, plan: RowErasure) -> RowErasure | None:
    """Take out of one row what ``plan`` found (one transaction); what went.
    A row that changed meanwhile is read and planned again: gone, or with
    nothing left to take out, it needs nothing more."""
    matcher = Matcher(search.terms)
    attempts = 0
    while True:
        record = plan.record
        if attempts == MAX_ATTEMPTS_PER_ROW:
            raise StorageError(f"could not remove user {search.user_id}'s lines from a row of "
                               f"channel {record.key.channel_id}: it kept changing under "
                               "concurrent writes; run forget again")
        attempts += 1
        write = search.erasure.clear_content if plan.clear else search.erasure.replace_messages
        done = await engine.write_row(record.key, functools.partial(
            write, record.key, plan.kept, expected_rev=record.rev))
        if done is not None:
            return plan
        fresh = await engine.read_memory(record.key)  # written meanwhile: again
        if fresh is None:
            return None
        plan = plan_row(fresh, await revisions_of(engine, fresh.key), matcher)
        if not plan.changes:
            return None


# -- export -----------------------------------------------------------------------------
def iso_time(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time, e.g. ``2026-12-06T17:33:13.000Z``."""
    return (datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"))


def line_export(m: CrudeMessage) -> dict[str, Any]:
    return {**line_to_dict(m), "time": iso_time(m.timestamp_ms)}


def revision_export(r: MemoryRevision) -> dict[str, Any]:
    return {"rev": r.rev, "summary": r.summary, "categories": dict(r.categories),
            "author": r.author, "actor": r.actor, "written_at_ms": r.written_at_ms,
            "written_at": iso_time(r.written_at_ms)}


def exported_line_of_own_row(key: MemoryKey, m: CrudeMessage, user_id: str) -> bool:
    """In the user's own row: their lines and the persona's; in a DM (them
    and the bot alone) lines without an author id too. Other people's lines
    are theirs, not this user's."""
    return (m.role == "model" or m.author_id == user_id
            or (m.author_id is None and key.server_id is None))


def own_row_export(record: MemoryRecord, revisions: Sequence[MemoryRevision],
                   user_id: str) -> dict[str, Any]:
    lines = [m for m in record.messages if exported_line_of_own_row(record.key, m, user_id)]
    return {"key": key_to_dict(record.key), "messages": [line_export(m) for m in lines],
            "lines_not_exported": len(record.messages) - len(lines),
            "updated_at_ms": record.updated_at_ms, "updated_at": iso_time(record.updated_at_ms),
            "summary": record.summary, "categories": dict(record.categories),
            "revisions": [revision_export(r) for r in revisions],
            "parent_channel_id": record.parent_channel_id,
            "persona_lineage_id": record.persona_lineage_id,
            "turns_since_refresh": record.turns_since_refresh}


def lines_export(record: MemoryRecord, user_id: str) -> dict[str, Any]:
    return {"key": key_to_dict(record.key),
            "messages": [line_export(m) for m in record.messages if m.author_id == user_id],
            "updated_at_ms": record.updated_at_ms, "updated_at": iso_time(record.updated_at_ms)}


def mention_export(record: MemoryRecord, revisions: Sequence[MemoryRevision],
                   matcher: Matcher) -> dict[str, Any] | None:
    """What in another row names the user: the summary, the category texts,
    the lines and the kept revisions that do; ``None`` when nothing does."""
    summary = record.summary if matcher.names(record.summary) else None
    categories = {slug: text for slug, text in record.categories.items() if matcher.names(text)}
    lines = matcher.lines(record.messages)
    naming = matcher.revisions(revisions)
    if summary is None and not categories and not lines and not naming:
        return None
    return {"key": key_to_dict(record.key), "summary": summary, "categories": categories,
            "messages": [line_export(m) for m in lines],
            "revisions": [revision_export(r) for r in naming],
            "updated_at_ms": record.updated_at_ms, "updated_at": iso_time(record.updated_at_ms)}


async def export_user(engine: Engine, user_id: str,
                      names: Sequence[str] = ()) -> dict[str, Any]:
    """Every stored thing about the user, as JSON-able data."""
    search = Search(engine, user_id, names)
    own = await search.own_rows()
    plans = await search.scan(own)  # also learns the names to search for
    matcher = Matcher(search.terms)
    plans.sort(key=lambda p: attrs.astuple(p.record.key))
    authored = [p.record for p in plans if p.own_lines]
    mentions = []
    for plan in plans:
        found = mention_export(plan.record, plan.revisions, matcher)
        if found is not None:
            mentions.append(found)
    prefs = await engine.read_prefs(user_id)
    unchecked, unchecked_count = await unchecked_lines(
        engine, user_id, [r.key for r in own] + [p.record.key for p in plans])
    now = engine.clock.now_ms()
    return {
        "user_id": user_id,
        "exported_at_ms": now,
        "exported_at": iso_time(now),
        "preferences": {"crossserver_opt_in": prefs.crossserver_opt_in},
        "own_rows": [own_row_export(r, await revisions_of(engine, r.key), user_id)
                     for r in own],
        "lines_in_other_rows": [lines_export(r, user_id) for r in authored],
        # Memory of other rows that names the user, marked as such.
        "mentions": mentions,
        "searched_for": search.terms.to_dict(),
        # Lines nobody can attribute: perhaps the user's, not exported.
        "unchecked_lines": unchecked_count,
        "unchecked_rows": [key_to_dict(k) for k in unchecked],
    }
