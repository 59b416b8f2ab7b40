"""The note a summary or category write carries into the memory history.

Shared by the tool's writes and admin's: the settings decide whether history is
kept and how many revisions, the writer says who wrote.
"""

from __future__ import annotations

from stm_core.settings import Settings
from stm_core.storage.records import RevisionAuthor, RevisionNote


def revision_note(settings: Settings, author: RevisionAuthor, *, actor: str | None = None,
                  restored_from: int | None = None) -> RevisionNote | None:
    """The note a summary/category write carries; ``None`` when history is off."""
    if settings.memory_history_revisions == 0:
        return None
    return RevisionNote(author=author, actor=actor, restored_from=restored_from,
                        keep=settings.memory_history_revisions + 1)
