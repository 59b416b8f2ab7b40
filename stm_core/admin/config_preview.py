"""What ``import_config`` would change, without changing it (``--dry-run``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from stm_core.admin.config_io import export_document
from stm_core.storage.records import CategoryRecord, ServerSettings


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any],
                   prefix: str = "") -> list[str]:
    """Dotted names of the fields that differ (nested documents compared field by field)."""
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            out += changed_fields(old, new, f"{prefix}{name}.")
        elif old != new:
            out.append(prefix + name)
    return out


def preview_import(current: ServerSettings, changes: Mapping[str, object],
                   categories: Sequence[CategoryRecord], *,
                   server_memory_rows: int) -> dict[str, Any]:
    """The configuration an import would store, the fields it would change, and
    whether it would clear the server's shared memories: the categories change
    and the server has some (``server_memory_rows``, its server-scope rows)."""
    after = attrs.evolve(current, categories=tuple(categories),
                         **changes)  # type: ignore[arg-type]
    before_doc, after_doc = export_document(current), export_document(after)
    return {"server_id": current.server_id, "dry_run": True,
            "would_change": changed_fields(before_doc, after_doc),
            "clears_server_memories": (tuple(categories) != current.categories
                                       and server_memory_rows > 0),
            "config": after_doc}
