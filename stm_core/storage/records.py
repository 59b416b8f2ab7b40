"""Rows as storage adapters hand them to the core, and the writes the core asks for.

Storage speaks in these records only; the cache and the pipeline never see a
driver row. Times are integer epoch milliseconds from the store's clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

from stm_core.errors import ValidationError
from stm_core.models import CrudeMessage


def _to_frozenset(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


ScopeKind = Literal["server", "user"]

#: ``server_id`` stored for direct-message rows.
DM_SERVER = ""


@attrs.frozen(kw_only=True, cache_hash=True)
class MemoryKey:
    """Identity of one memory row.

    * server scope: ``(server, server_id, "", channel_id, persona_id)`` (shared by
      every member of a guild channel);
    * user scope: ``(user, server_id or "", user_id, channel_id, persona_id)``
      (DMs, and a guild user's copy that feeds DM and cross-server recall).

    Absent ids are stored as ``""`` so the unique key needs no ``coalesce``.
    """

    scope_kind: ScopeKind
    server_id: str
    user_id: str
    channel_id: str
    persona_id: str

    @classmethod
    def server(cls, server_id: str, channel_id: str, persona_id: str | None) -> MemoryKey:
        return _key(cls, ("server", server_id, "", channel_id, persona_id or ""))

    @classmethod
    def user(cls, user_id: str, channel_id: str, persona_id: str | None,
             server_id: str | None) -> MemoryKey:
        return _key(cls, ("user", server_id or DM_SERVER, user_id, channel_id,
                          persona_id or ""))


#: Keys made lately by :meth:`MemoryKey.server` and :meth:`MemoryKey.user`,
#: by their fields. Every turn asks for the same few keys again: handing out
#: the same object skips building one (a frozen class costs a call per field)
#: and lets dictionaries keyed by it match by identity, without ``__eq__``.
_KEYS: dict[tuple[ScopeKind, str, str, str, str], MemoryKey] = {}
#: Keys remembered before the table starts over (bounds its memory).
KEYS_REMEMBERED = 4096


def memory_key(ids: tuple[ScopeKind, str, str, str, str]) -> MemoryKey:
    """The key of ``(scope_kind, server_id, user_id, channel_id, persona_id)``,
    the same object as last time (see ``_KEYS``)."""
    return _key(MemoryKey, ids)


def _key(cls: type[MemoryKey], ids: tuple[ScopeKind, str, str, str, str]) -> MemoryKey:
    if cls is not MemoryKey:  # a subclass's keys are its own
        return cls(scope_kind=ids[0], server_id=ids[1], user_id=ids[2], channel_id=ids[3],
                   persona_id=ids[4])
    key = _KEYS.get(ids)
    if key is None:
        key = MemoryKey(scope_kind=ids[0], server_id=ids[1], user_id=ids[2],
                        channel_id=ids[3], persona_id=ids[4])
        if len(_KEYS) >= KEYS_REMEMBERED:
            _KEYS.clear()
        _KEYS[ids] = key
    return key


@attrs.frozen(kw_only=True)
class MemoryRecord:
    """One stored memory row, exactly as committed."""

    key: MemoryKey
    parent_channel_id: str | None = None
    persona_lineage_id: str | None = None
    summary: str | None = None
    #: slug -> text, in the order they were written.
    categories: Mapping[str, str] = attrs.field(factory=dict)
    messages: tuple[CrudeMessage, ...] = ()
    turns_since_refresh: int = 0
    last_refreshed_turn: int = 0
    #: Last crude capture, summary write or category write (not counter bumps).
    updated_at_ms: int = 0
    #: Bumped by every write; the cache keeps the highest it has seen.
    rev: int = 0

    @property
    def has_content(self) -> bool:
        return bool(self.summary) or bool(self.categories)


@attrs.frozen(kw_only=True)
class CategoryRecord:
    position: int
    label: str
    description: str


@attrs.frozen(kw_only=True)
class ServerSettings:
    """A server's stored STM settings. ``None`` means "use the default"."""

    server_id: str
    refresh_cadence: int | None = None
    render_mode: str | None = None
    crude_message_count: int | None = None
    nudge_injection_depth: int | None = None
    content_injection_depth: int | None = None
    tool_description_override: str | None = None
    update_nudge_override: str | None = None
    #: The short-term-memory capability switch; ``None`` counts as enabled.
    stm_enabled: bool | None = None
    private_channel_ids: frozenset[str] = attrs.field(factory=frozenset, converter=_to_frozenset)
    privacy_bypass: bool = False
    #: Ordered by position; empty means the implicit default ``summary`` category.
    categories: tuple[CategoryRecord, ...] = ()
    updated_at_ms: int = 0
    #: ``"freshness"`` or ``"stable"`` (provider prompt caches); ``None``: the default.
    cache_policy: str | None = None

    #: Tokens of a turn's STM block in this server; ``None``: the process setting.
    prompt_budget_tokens: int | None = None


#: Columns of :class:`ServerSettings` that ``update_server_settings`` may change.
SERVER_SETTING_FIELDS: tuple[str, ...] = (
    "refresh_cadence",
    "render_mode",
    "crude_message_count",
    "nudge_injection_depth",
    "content_injection_depth",
    "tool_description_override",
    "update_nudge_override",
    "stm_enabled",
    "private_channel_ids",
    "privacy_bypass",
    "cache_policy",

    "prompt_budget_tokens",
)


@attrs.frozen(kw_only=True)
class UserPrefs:
    user_id: str
    crossserver_opt_in: bool = False


@attrs.frozen(kw_only=True)
class CaptureWrite:
    """Per-turn crude capture of one row (``record_turn``).

    The adapter upserts the row: replaces ``messages``, sets ``updated_at_ms``,
    sets lineage/parent when given, adds ``counter_increment`` to the counter in
    SQL. When the existing row was already expired at ``now_ms`` (see
    :func:`stm_core.pipeline.memory_ttl.is_expired`), its summary and categories are cleared
    in the same statement, so an expired memory never comes back.
    """

    key: MemoryKey
    messages: tuple[CrudeMessage, ...]
    now_ms: int
    counter_increment: int = 0
    persona_lineage_id: str | None = None
    parent_channel_id: str | None = None
    #: TTLs used to decide whether the stored row had expired.
    crude_ttl_ms: int = 12 * 3600 * 1000
    summary_ttl_ms: int = 24 * 3600 * 1000


@attrs.frozen(kw_only=True)
class MemoryWrite:
    """A summary or category write (tool, admin edit).

    Only the parts flagged ``set_*`` change; the rest of the row is kept.
    ``reset_counter`` sets the counter to 0 and adds one to
    ``last_refreshed_turn``.
    """

    key: MemoryKey
    now_ms: int
    set_summary: bool = False
    summary: str | None = None
    set_categories: bool = False
    categories: Mapping[str, str] = attrs.field(factory=dict)
    reset_counter: bool = False
    persona_lineage_id: str | None = None
    parent_channel_id: str | None = None
    #: Drop the stored crude messages too (admin "clear summary").
    clear_messages: bool = False
    #: TTLs used to decide whether the stored row had expired; an expired
    #: row's old summary, categories and messages are dropped, not revived.
    crude_ttl_ms: int = 12 * 3600 * 1000
    summary_ttl_ms: int = 24 * 3600 * 1000
    #: Who writes; adapters with :class:`~stm_core.storage.protocol.MemoryHistory`
    #: keep a revision of the result. Others ignore it.
    revision: RevisionNote | None = None


RevisionAuthor = Literal["model", "admin", "import"]


@attrs.frozen(kw_only=True)
class RevisionNote:
    """Who makes a summary/category write, for adapters that keep history.

    The adapter stores the row's content *after* the write as a revision
    numbered with the row's new ``rev``, and keeps only the newest ``keep``
    revisions of the row, in the same transaction as the write.
    """

    author: RevisionAuthor
    #: The acting user of an admin write, when known.
    actor: str | None = None
    #: The revision this write restores, when it is a restore or an undo.
    restored_from: int | None = None
    keep: int = 11


@attrs.frozen(kw_only=True)
class MemoryRevision:
    """One kept state of a row's summary and categories."""

    key: MemoryKey
    #: The row's ``rev`` right after the write that produced this state.
    rev: int
    summary: str | None
    categories: Mapping[str, str] = attrs.field(factory=dict)
    author: RevisionAuthor = "model"
    actor: str | None = None
    restored_from: int | None = None
    written_at_ms: int = 0


@attrs.frozen(kw_only=True)
class MemoryFilter:
    """Which rows ``delete_memories`` removes; every given field must match."""

    channel_id: str | None = None
    user_id: str | None = None
    server_id: str | None = None
    scope_kind: ScopeKind | None = None
    persona_id: str | None = None

    def is_empty(self) -> bool:
        return all(v is None for v in attrs.astuple(self))


def newest_first_order(record: MemoryRecord) -> tuple[int, str, str, str, str, str]:
    """Where ``record`` stands in a bounded read (:class:`NewestRows`): by
    ``updated_at_ms``, then its key's fields compared as text code point by
    code point (rows ascend by it; a bounded read returns them descending)."""
    key = record.key
    return (record.updated_at_ms, key.scope_kind, key.server_id, key.user_id, key.channel_id,
            key.persona_id)


def _limit(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValidationError(f"limit must be a whole number of at least 1, got {value!r}",
                              field="limit")


@attrs.frozen(kw_only=True)
class NewestRows:
    """One bounded read of a server's server-scope rows: the newest ``limit``
    rows updated at or after ``updated_since_ms`` (newest first, in the order
    of :func:`newest_first_order`), of those that pass every filter given:

    * ``lineage``: only rows of that persona lineage (``None``: any);
    * ``hidden_channels``: no row of those channels, nor of a thread whose
      parent channel is one of them;
    * ``crude_since_ms``: a row without a summary (an empty summary is
      none) only if it was updated at or after this.

    Rows past ``limit`` are not read: a read of ``n + 1`` rows tells whether
    there are more than ``n`` and where they begin.
    """

    server_id: str
    updated_since_ms: int
    limit: int = attrs.field(validator=_limit)
    lineage: str | None = None
    hidden_channels: frozenset[str] = attrs.field(default=frozenset(),
                                                  converter=_to_frozenset)
    crude_since_ms: int | None = None

    def takes(self, record: MemoryRecord) -> bool:
        """Whether ``record`` passes this read's filters (the limit aside)."""
        key = record.key
        hidden = self.hidden_channels
        return (key.scope_kind == "server" and key.server_id == self.server_id
                and record.updated_at_ms >= self.updated_since_ms
                and (self.lineage is None or record.persona_lineage_id == self.lineage)
                and not (hidden and (key.channel_id in hidden
                                     or record.parent_channel_id in hidden))
                and (self.crude_since_ms is None or bool(record.summary)
                     or record.updated_at_ms >= self.crude_since_ms))


@attrs.frozen(kw_only=True)
class SchemaStatus:
    """What ``setup()`` found and did."""

    from_version: int | None
    to_version: int
    created: bool = False


@attrs.frozen(kw_only=True)
class ChangeNotice:
    """What another process's committed write changed (cross-process invalidation).

    ``origin`` is the writing store's instance id, so a store ignores its own
    notices (its cache already holds what it wrote).
    """

    origin: str
    #: Memory rows upserted or deleted.
    keys: tuple[MemoryKey, ...] = ()
    #: Servers whose settings or categories changed.
    servers: tuple[str, ...] = ()
    #: Users whose preferences changed.
    users: tuple[str, ...] = ()
    #: The janitor deleted rows untouched since this time.
    purged_before_ms: int | None = None
    #: Too much changed to name: drop every cached view.
    everything: bool = False
