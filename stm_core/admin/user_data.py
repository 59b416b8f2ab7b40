"""A user's privacy requests: forget everything of them, or export it.

What belongs to a user: their own (user-scope) rows in every server and DM,
every stored line whose author id is theirs (in server rows and in other
users' copies), and their preferences (the cross-server opt-in). Lines stored
without an author id (before authors were kept, or from a host that does not
pass them) cannot be attributed; they age out with the crude TTL and the
janitor. Both requests count those lines in the rows of the channels where the
user had a row or a line, so the operator knows what could not be checked
(docs/privacy.md says what to do about them).

Forgetting changes one row per transaction. A shared row is rewritten only if
nobody wrote it since it was read (its ``rev``); otherwise it is read again
and retried, so a concurrent ``record_turn`` never loses its lines and never
brings the forgotten ones back. The store's cache is updated from what each
transaction committed, and adapters shared by several processes announce
each change to the others.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from stm_core.admin.values import key_to_dict, line_to_dict
from stm_core.errors import StorageError
from stm_core.models import CrudeMessage
from stm_core.storage.protocol import UserErasure
from stm_core.storage.records import MemoryFilter, MemoryKey, MemoryRecord, UserPrefs

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

log = logging.getLogger("stm.admin")

#: Rewrites of one row that lost to concurrent writers before giving up.
MAX_ATTEMPTS_PER_ROW = 50
#: Scans for lines written by concurrent writers while forgetting.
MAX_SCANS = 5


@attrs.frozen(kw_only=True)
class ForgetResult:
    """What ``forget_user`` removed (or, with ``dry_run``, would remove)."""

    user_id: str
    dry_run: bool
    #: The user's own rows, deleted whole.
    rows_removed: tuple[MemoryKey, ...]
    #: Other rows the user's lines were taken out of.
    rows_changed: tuple[MemoryKey, ...]
    lines_removed: int
    #: Whether stored preferences (the cross-server opt-in) were deleted.
    preferences_removed: bool
    #: Rows of the user's channels holding user lines without an author id,
    #: which could not be checked (see :func:`unchecked_lines`).
    unchecked_rows: tuple[MemoryKey, ...] = ()
    unchecked_lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "dry_run": self.dry_run,
                "rows_removed": [key_to_dict(k) for k in self.rows_removed],
                "rows_changed": [key_to_dict(k) for k in self.rows_changed],
                "lines_removed": self.lines_removed,
                "preferences_removed": self.preferences_removed,
                "unchecked_lines": self.unchecked_lines,
                "unchecked_rows": [key_to_dict(k) for k in self.unchecked_rows]}


def erasure_of(engine: Engine) -> UserErasure:
    adapter = engine.adapter
    if not isinstance(adapter, UserErasure):
        raise StorageError(f"the {adapter.name} storage adapter cannot find or remove a "
                           "user's lines (it does not implement UserErasure)")
    return adapter


def is_own(key: MemoryKey, user_id: str) -> bool:
    return key.scope_kind == "user" and key.user_id == user_id


def without(messages: Sequence[CrudeMessage], user_id: str) -> tuple[CrudeMessage, ...]:
    return tuple(m for m in messages if m.author_id != user_id)


def own_filter(user_id: str) -> MemoryFilter:
    return MemoryFilter(user_id=user_id, scope_kind="user")


def is_unattributed(message: CrudeMessage) -> bool:
    """A user's line stored without an author id: nobody's erasure finds it."""
    return message.role == "user" and message.author_id is None


async def unchecked_lines(engine: Engine, user_id: str, keys: Iterable[MemoryKey]
                          ) -> tuple[tuple[MemoryKey, ...], int]:
    """The rows, other than the user's own, of the server channels of ``keys``
    (where the user had a row or a line) that hold user lines without an
    author id, and how many such lines they hold: the user may have written
    them, and no erasure can tell. Direct-message rows are the user's own."""
    rows: list[MemoryKey] = []
    lines = 0
    for server_id, channel_id in sorted({(k.server_id, k.channel_id) for k in keys
                                         if k.server_id is not None}):
        for record in await engine.adapter.list_memories(
                MemoryFilter(server_id=server_id, channel_id=channel_id)):
            count = sum(map(is_unattributed, record.messages))
            if count and not is_own(record.key, user_id):
                rows.append(record.key)
                lines += count
    return tuple(rows), lines


async def forget_user(engine: Engine, user_id: str, *, dry_run: bool) -> ForgetResult:
    erasure = erasure_of(engine)
    if dry_run:
        own = await engine.adapter.list_memories(own_filter(user_id))
        shared = [r for r in await erasure.rows_with_author(user_id)
                  if not is_own(r.key, user_id)]
        prefs = await engine.adapter.load_user_prefs(user_id)
        unchecked, unchecked_count = await unchecked_lines(
            engine, user_id, [r.key for r in (*own, *shared)])
        return ForgetResult(
            user_id=user_id, dry_run=True, rows_removed=tuple(r.key for r in own),
            rows_changed=tuple(r.key for r in shared),
            lines_removed=sum(len(r.messages) - len(without(r.messages, user_id))
                              for r in shared),
            preferences_removed=prefs != UserPrefs(user_id=user_id),
            unchecked_rows=unchecked, unchecked_lines=unchecked_count)

    removed = dict.fromkeys(await _delete_own_rows(engine, user_id))
    changed: dict[MemoryKey, None] = {}
    lines = 0
    for _ in range(MAX_SCANS):  # again while concurrent writers add the user's lines
        found = await erasure.rows_with_author(user_id)
        if not found:
            break
        if any(is_own(r.key, user_id) for r in found):  # the host wrote one again meanwhile
            removed.update(dict.fromkeys(await _delete_own_rows(engine, user_id)))
        for record in found:
            if is_own(record.key, user_id):
                continue
            taken = await _strip_row(engine, erasure, record, user_id)
            if taken:
                changed[record.key] = None
                lines += taken
    else:
        raise StorageError(f"user {user_id}'s lines are still being written (the host's "
                           "history windows still hold them); run forget again once they "
                           "are gone from the host")
    # Their view reloads with the default preferences.
    prefs_removed = await engine.erase_prefs(user_id, lambda: erasure.delete_user_prefs(user_id))
    unchecked, unchecked_count = await unchecked_lines(engine, user_id, [*removed, *changed])
    log.info("user %s forgotten: %d own rows, %d lines in %d other rows, preferences %s; "
             "%d lines without an author id in %d rows of their channels not checked",
             user_id, len(removed), lines, len(changed),
             "removed" if prefs_removed else "none stored", unchecked_count, len(unchecked))
    return ForgetResult(user_id=user_id, dry_run=False, rows_removed=tuple(removed),
                        rows_changed=tuple(changed), lines_removed=lines,
                        preferences_removed=prefs_removed, unchecked_rows=unchecked,
                        unchecked_lines=unchecked_count)


async def _delete_own_rows(engine: Engine, user_id: str) -> list[MemoryKey]:
    return await engine.delete_memories(own_filter(user_id))


async def _strip_row(engine: Engine, erasure: UserErasure, record: MemoryRecord | None,
                     user_id: str) -> int:
    """Take the user's lines out of one row (one transaction); how many went.
    A row that changed meanwhile is read again: gone, or without the user's
    lines, it needs nothing more."""
    attempts = 0
    while record is not None:
        kept = without(record.messages, user_id)
        if len(kept) == len(record.messages):
            return 0
        if attempts == MAX_ATTEMPTS_PER_ROW:
            raise StorageError(f"could not remove user {user_id}'s lines from a row of channel "
                               f"{record.key.channel_id}: it kept changing under concurrent "
                               "writes; run forget again")
        attempts += 1
        done = await engine.write_row(record.key, functools.partial(
            erasure.replace_messages, record.key, kept, expected_rev=record.rev))
        if done is not None:
            return len(record.messages) - len(kept)
        record = await engine.adapter.get_memory(record.key)  # written meanwhile: again
    return 0


def record_to_dict(record: MemoryRecord, *, only_author: str | None = None) -> dict[str, Any]:
    lines = [m for m in record.messages if only_author is None or m.author_id == only_author]
    out: dict[str, Any] = {"key": key_to_dict(record.key),
                           "messages": [line_to_dict(m) for m in lines],
                           "updated_at_ms": record.updated_at_ms}
    if only_author is None:
        out.update(summary=record.summary, categories=dict(record.categories),
                   parent_channel_id=record.parent_channel_id,
                   persona_lineage_id=record.persona_lineage_id,
                   turns_since_refresh=record.turns_since_refresh)
    return out


async def export_user(engine: Engine, user_id: str) -> dict[str, Any]:
    """Every stored thing about the user, as JSON-able data."""
    erasure = erasure_of(engine)
    own = await engine.adapter.list_memories(own_filter(user_id))
    shared = [r for r in await erasure.rows_with_author(user_id) if not is_own(r.key, user_id)]
    prefs = await engine.adapter.load_user_prefs(user_id)
    unchecked, unchecked_count = await unchecked_lines(
        engine, user_id, [r.key for r in (*own, *shared)])
    return {
        "user_id": user_id,
        "exported_at_ms": engine.clock.now_ms(),
        "preferences": {"crossserver_opt_in": prefs.crossserver_opt_in},
        "own_rows": [record_to_dict(r) for r in own],
        "lines_in_other_rows": [record_to_dict(r, only_author=user_id) for r in shared],
        # Lines nobody can attribute: perhaps the user's, not exported.
        "unchecked_lines": unchecked_count,
        "unchecked_rows": [key_to_dict(k) for k in unchecked],
    }
