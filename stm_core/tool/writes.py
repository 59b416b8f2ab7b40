"""The memory writes of a successful ``update_short_term_memory`` call.

The live row comes first (its cadence counter resets) and, in a guild, the
triggering user's own copy follows (it feeds DM and cross-server recall). Both
carry the model's revision note and the store's TTLs.
"""

from __future__ import annotations

from typing import Any

from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite, RevisionNote
from stm_core.storage.revision_notes import revision_note

#: The model's revision note under one ``Settings`` object (the TTLs are
#: cached by the settings themselves). Settings are frozen, so the note holds
#: while the store keeps that object; other settings derive it again.
_note: tuple[Settings, RevisionNote | None] | None = None


def _model_note(settings: Settings) -> RevisionNote | None:
    global _note
    known = _note
    if known is None or known[0] is not settings:
        known = _note = (settings, revision_note(settings, "model"))
    return known[1]


def summary_writes(turn: Turn, settings: Settings, now_ms: int,
                   summary: str) -> list[MemoryWrite]:
    """The writes that set ``summary`` on the turn's rows."""
    return _writes(turn, settings, now_ms, set_summary=True, summary=summary)


def category_writes(turn: Turn, settings: Settings, now_ms: int,
                    categories: dict[str, str]) -> list[MemoryWrite]:
    """The writes that replace the turn's rows' categories with ``categories``."""
    return _writes(turn, settings, now_ms, set_categories=True, categories=categories)


def _writes(turn: Turn, settings: Settings, now_ms: int, **change: Any) -> list[MemoryWrite]:
    note = _model_note(settings)
    return [MemoryWrite(key=key, now_ms=now_ms, revision=note, reset_counter=live,
                        persona_lineage_id=turn.persona_lineage_id,
                        parent_channel_id=turn.parent_channel_id,
                        crude_ttl_ms=settings.crude_ttl_ms,
                        summary_ttl_ms=settings.summary_ttl_ms, **change)
            for key, live in _keys(turn)]


def _keys(turn: Turn) -> tuple[tuple[MemoryKey, bool], ...]:
    """``(key, is the live row)`` of each row the turn writes, the live row first."""
    assert turn.user_id is not None  # the caller checked the turn is identifiable
    user_key = MemoryKey.user(turn.user_id, turn.channel_id, turn.persona_id, turn.server_id)
    if turn.server_id is None:
        return ((user_key, True),)
    return ((MemoryKey.server(turn.server_id, turn.channel_id, turn.persona_id), True),
            (user_key, False))
