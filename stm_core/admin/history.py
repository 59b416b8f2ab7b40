"""Summary history: the kept revisions of a memory row, diffs, undo and restore.

Every summary or category write (the model's tool call, an admin edit, a
restore) is stored as a revision by adapters with the
:class:`~stm_core.storage.protocol.MemoryHistory` capability; a row keeps its
newest ``memory_history_revisions + 1`` (the current content and that many
earlier ones). Undo restores the newest revision whose content differs from
the row's; a restore is itself a new revision, so it can be undone too.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from stm_core.admin.values import MemorySnapshot, key_to_dict
from stm_core.errors import ValidationError
from stm_core.settings import Settings
from stm_core.storage.records import (
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    MemoryWrite,
)
from stm_core.storage.revision_notes import revision_note as revision_note


def content_text(summary: str | None, categories: Mapping[str, str]) -> str:
    """A row's content as text to compare and show: the summary, then each
    category as ``slug: text``."""
    parts = [summary] if summary else []
    parts += [f"{slug}: {text}" for slug, text in categories.items() if text.strip()]
    return "\n".join(parts)


def diff_lines(current: str, other: str, rev: int) -> tuple[str, ...]:
    """What restoring revision ``rev`` would change, as a unified diff."""
    return tuple(line.rstrip("\n") for line in difflib.unified_diff(
        current.splitlines(), other.splitlines(), fromfile="current",
        tofile=f"revision {rev}", lineterm=""))


@attrs.frozen(kw_only=True)
class RevisionInfo:
    rev: int
    author: str
    actor: str | None
    restored_from: int | None
    written_at_ms: int
    text: str
    #: The row holds exactly this content now.
    is_current: bool
    #: Unified diff from the current content to this revision.
    diff: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rev": self.rev, "author": self.author, "actor": self.actor,
                "restored_from": self.restored_from, "written_at_ms": self.written_at_ms,
                "text": self.text, "is_current": self.is_current, "diff": list(self.diff)}


@attrs.frozen(kw_only=True)
class MemoryHistoryView:
    """A row's kept revisions, newest first, each compared with the current content."""

    key: MemoryKey
    current_text: str
    revisions: tuple[RevisionInfo, ...]
    #: Earlier revisions kept per row (``STM_MEMORY_HISTORY_REVISIONS``).
    limit: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": key_to_dict(self.key), "current_text": self.current_text,
                "limit": self.limit, "revisions": [r.to_dict() for r in self.revisions]}


@attrs.frozen(kw_only=True)
class MemoryRestore:
    """What ``undo_memory`` or ``restore_memory`` wrote."""

    snapshot: MemorySnapshot
    restored_from: int
    #: The revision number of the restore itself.
    rev: int

    def to_dict(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot.to_dict(), "restored_from": self.restored_from,
                "rev": self.rev}


def history_view(key: MemoryKey, record: MemoryRecord | None,
                 revisions: Sequence[MemoryRevision], *, limit: int) -> MemoryHistoryView:
    current = content_text(record.summary, record.categories) if record else ""
    infos = []
    for r in revisions:
        text = content_text(r.summary, r.categories)
        infos.append(RevisionInfo(rev=r.rev, author=r.author, actor=r.actor,
                                  restored_from=r.restored_from, written_at_ms=r.written_at_ms,
                                  text=text, is_current=text == current,
                                  diff=diff_lines(current, text, r.rev)))
    return MemoryHistoryView(key=key, current_text=current, revisions=tuple(infos),
                             limit=limit)


def undo_target(record: MemoryRecord | None,
                revisions: Sequence[MemoryRevision]) -> MemoryRevision:
    """The newest revision whose content differs from the row's."""
    current = content_text(record.summary, record.categories) if record else ""
    for r in revisions:
        if content_text(r.summary, r.categories) != current:
            return r
    raise ValidationError("nothing to undo: no kept revision differs from the current memory",
                          field="rev", allowed="a memory with an earlier revision")


def find_revision(revisions: Sequence[MemoryRevision], rev: int) -> MemoryRevision:
    for r in revisions:
        if r.rev == rev:
            return r
    kept = ", ".join(str(r.rev) for r in revisions) or "none"
    raise ValidationError(f"revision {rev} is not kept for this memory (kept: {kept})",
                          field="rev", allowed=kept)


def restore_write(revision: MemoryRevision, *, now_ms: int, settings: Settings,
                  actor: str | None) -> MemoryWrite:
    """Write the revision's content back, as a new revision by an admin."""
    note = revision_note(settings, "admin", actor=actor, restored_from=revision.rev)
    return MemoryWrite(key=revision.key, now_ms=now_ms, set_summary=True,
                       summary=revision.summary, set_categories=True,
                       categories=dict(revision.categories), revision=note,
                       crude_ttl_ms=settings.crude_ttl_ms,
                       summary_ttl_ms=settings.summary_ttl_ms)
