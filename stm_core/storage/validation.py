"""Argument checks every storage adapter applies the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def channel_id_set(name: str, value: object) -> frozenset[str]:
    """A collection of channel ids (``None``: none) as a set; anything else is refused."""
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationError(f"{name} must be a collection of channel ids, got {value!r}",
                              field=name)
    ids = list(value)
    if not all(isinstance(i, str) for i in ids):
        raise ValidationError(f"{name} must hold channel ids as text", field=name)
    return frozenset(ids)
