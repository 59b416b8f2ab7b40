"""What the admin calls return: frozen values a host can show or serialise.

Every value has ``to_dict()`` giving plain JSON types, so the ``stm`` command
(and any host) can print it for scripts without knowing its shape.
:class:`ServerParams` lives with the parameters' rules
(:mod:`stm_core.admin.params`) and is listed here too: ``stm server params``
then builds it without the other values.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from stm_core.admin.params import ServerParams
from stm_core.models import CrudeMessage
from stm_core.storage.records import MemoryKey

Mode = Literal["summary", "category"]


@attrs.frozen(kw_only=True)
class PromptText:
    """One overridable prompt: the text in effect and whether it is the default."""

    text: str
    is_default: bool

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "is_default": self.is_default}


@attrs.frozen(kw_only=True)
class ServerPrompts:
    server_id: str
    mode: Mode
    tool_description: PromptText
    nudge: PromptText

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": self.server_id, "mode": self.mode,
                "tool_description": self.tool_description.to_dict(),
                "nudge": self.nudge.to_dict()}


@attrs.frozen(kw_only=True)
class CategoryInfo:
    position: int
    label: str
    description: str
    slug: str

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "label": self.label,
                "description": self.description, "slug": self.slug}


@attrs.frozen(kw_only=True)
class ServerCategories:
    """The effective categories (the implicit ``summary`` one when none are stored)."""

    server_id: str
    mode: Mode
    categories: tuple[CategoryInfo, ...]
    is_default: bool
    #: Server-scope memory rows deleted by the write that produced this value.
    cleared_memories: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": self.server_id, "mode": self.mode,
                "is_default": self.is_default,
                "categories": [c.to_dict() for c in self.categories],
                "cleared_memories": self.cleared_memories}


@attrs.frozen(kw_only=True)
class PrivacySettings:
    server_id: str
    private_channel_ids: tuple[str, ...]
    privacy_bypass: bool

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": self.server_id,
                "private_channel_ids": list(self.private_channel_ids),
                "privacy_bypass": self.privacy_bypass}


@attrs.frozen(kw_only=True)
class Capability:
    """The short-term-memory switch (``stm_enabled``); unset counts as on."""

    server_id: str
    stm_enabled: bool
    is_default: bool

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": self.server_id, "stm_enabled": self.stm_enabled,
                "is_default": self.is_default}


@attrs.frozen(kw_only=True)
class UserOptIn:
    user_id: str
    crossserver_opt_in: bool

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "crossserver_opt_in": self.crossserver_opt_in}


@attrs.frozen(kw_only=True)
class MemorySection:
    """One labelled part of a memory (a category, or the summary)."""

    slug: str
    label: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "label": self.label, "text": self.text}


def key_to_dict(key: MemoryKey) -> dict[str, str]:
    return {"scope_kind": key.scope_kind, "server_id": key.server_id,
            "user_id": key.user_id, "channel_id": key.channel_id,
            "persona_id": key.persona_id}


@attrs.frozen(kw_only=True)
class MemorySnapshot:
    """The live (injected) memory of one persona in one channel."""

    key: MemoryKey
    #: ``"server"`` (shared by a guild channel) or ``"dm"`` (one user's DM).
    scope: Literal["server", "dm"]
    mode: Mode
    exists: bool
    sections: tuple[MemorySection, ...]
    #: The display text: sections or the summary, or the empty notice; cut at
    #: :data:`stm_core.admin.memory.VIEW_MAX_CHARS` with a notice.
    text: str
    truncated: bool
    is_empty: bool
    #: The row is older than its TTL, so nothing of it is injected any more.
    expired: bool
    turns_since_refresh: int
    updated_at_ms: int
    #: The stored raw lines (what other channels show of this one), oldest first.
    messages: tuple[CrudeMessage, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"key": key_to_dict(self.key), "scope": self.scope, "mode": self.mode,
                "exists": self.exists, "is_empty": self.is_empty, "expired": self.expired,
                "sections": [s.to_dict() for s in self.sections], "text": self.text,
                "truncated": self.truncated,
                "turns_since_refresh": self.turns_since_refresh,
                "updated_at_ms": self.updated_at_ms,
                "messages": [line_to_dict(m) for m in self.messages]}


def line_to_dict(m: CrudeMessage) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, "speaker_name": m.speaker_name,
            "timestamp_ms": m.timestamp_ms, "author_id": m.author_id}


@attrs.frozen(kw_only=True)
class PersonaMemory:
    """A persona with a non-blank memory or stored lines in a channel
    (``persona_id`` may be ``""``)."""

    persona_id: str
    #: ``"lines"``: only raw lines are stored (no summary or categories yet).
    mode_hint: Literal["summary", "categories", "lines"]
    updated_at_ms: int
    channel_id: str = ""
    #: How many raw lines are stored.
    lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"persona_id": self.persona_id, "content": self.mode_hint,
                "updated_at_ms": self.updated_at_ms, "channel_id": self.channel_id,
                "lines": self.lines}


@attrs.frozen(kw_only=True)
class MemoryEdit:
    """What ``edit_memory`` wrote."""

    snapshot: MemorySnapshot
    #: Keys written (the live key first, then the editor's user copy in a guild).
    keys: tuple[MemoryKey, ...]
    #: Slugs (or ``"summary"``) whose text was cut to the length limit.
    truncated: tuple[str, ...]
    cleared: bool

    def to_dict(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot.to_dict(),
                "keys": [key_to_dict(k) for k in self.keys],
                "truncated": list(self.truncated), "cleared": self.cleared}


@attrs.frozen(kw_only=True)
class ClearResult:
    removed: int
    keys: tuple[MemoryKey, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"removed": self.removed, "keys": [key_to_dict(k) for k in self.keys]}


__all__ = [
    "Capability",
    "CategoryInfo",
    "ClearResult",
    "MemoryEdit",
    "MemorySection",
    "MemorySnapshot",
    "Mode",
    "PersonaMemory",
    "PrivacySettings",
    "PromptText",
    "ServerCategories",
    "ServerParams",
    "ServerPrompts",
    "UserOptIn",
    "key_to_dict",
    "line_to_dict",
]
