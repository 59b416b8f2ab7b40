"""Argument checks every storage adapter applies the same way."""

from __future__ import annotations

from collections.abc import Mapping

from stm_core.errors import ValidationError
from stm_core.storage.records import SERVER_SETTING_FIELDS, MemoryFilter


def require_filter(flt: MemoryFilter) -> None:
    """An empty filter would match every row: refuse it."""
    if flt.is_empty():
        raise ValidationError("a memory filter needs at least one of channel_id, user_id, "
                              "server_id, scope_kind or persona_id", field="filter")


def check_setting_names(changes: Mapping[str, object]) -> None:
    """Only the columns of ``SERVER_SETTING_FIELDS`` may be changed."""
    unknown = sorted(set(changes) - set(SERVER_SETTING_FIELDS))
    if unknown:
        raise ValidationError(f"unknown server setting(s) {', '.join(unknown)}; allowed: "
                              + ", ".join(SERVER_SETTING_FIELDS), field="changes")
