"""An in-memory storage adapter (``memory://``): tests, demos, ephemeral bots.

It follows the storage contract exactly (it passes the conformance suite), but
nothing survives the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence

import attrs

from hookspecs import hookimpl
from hookspecs.types import StorageAdapterSpec
from stm_core.models import CrudeMessage
from stm_core.pipeline.memory_ttl import is_expired
from stm_core.settings import Settings
from stm_core.storage.newest import newest
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    MemoryWrite,
    NewestRows,
    SchemaStatus,
    ServerSettings,
    UserPrefs,
)
from stm_core.storage.validation import channel_id_set, check_setting_names, require_filter

SCHEMA_VERSION = 2


def matches(record: MemoryRecord, flt: MemoryFilter) -> bool:
    key = record.key
    return ((flt.channel_id is None or key.channel_id == flt.channel_id)
            and (flt.user_id is None or key.user_id == flt.user_id)
            and (flt.server_id is None or key.server_id == flt.server_id)
            and (flt.scope_kind is None or key.scope_kind == flt.scope_kind)
            and (flt.persona_id is None or key.persona_id == flt.persona_id))


class MemoryAdapter:
    """Dictionaries guarded by one lock; each call is one atomic step."""

    name = "memory"

    def __init__(self, url: str = "memory://", settings: Settings | None = None) -> None:
        self.url = url
        self._lock = asyncio.Lock()
        self._memories: dict[MemoryKey, MemoryRecord] = {}
        self._settings: dict[str, ServerSettings] = {}
        self._prefs: dict[str, UserPrefs] = {}
        #: Newest first; a row's list goes whenever the row goes (see _drop).
        self._revisions: dict[MemoryKey, list[MemoryRevision]] = {}
        self._set_up = False

    async def setup(self) -> SchemaStatus:
        created = not self._set_up
        self._set_up = True
        return SchemaStatus(from_version=None if created else SCHEMA_VERSION,
                            to_version=SCHEMA_VERSION, created=created)

    async def aclose(self) -> None:
        return None

    async def load_server_settings(self, server_id: str) -> ServerSettings:
        return self._settings.get(server_id) or ServerSettings(server_id=server_id)

    async def load_server_memories(self, server_id: str, *,
                                   updated_since_ms: int) -> list[MemoryRecord]:
        return [r for r in self._memories.values()
                if r.key.scope_kind == "server" and r.key.server_id == server_id
                and r.updated_at_ms >= updated_since_ms]

    async def newest_server_memories(self, reads: Sequence[NewestRows]
                                     ) -> list[list[MemoryRecord]]:
        rows = self._memories.values()
        return [newest(rows, read) for read in reads]

    async def load_user_prefs(self, user_id: str) -> UserPrefs:
        return self._prefs.get(user_id) or UserPrefs(user_id=user_id)

    async def load_user_memories(self, user_id: str, *,
                                 updated_since_ms: int) -> list[MemoryRecord]:
        return [r for r in self._memories.values()
                if r.key.scope_kind == "user" and r.key.user_id == user_id
                and r.updated_at_ms >= updated_since_ms]

    async def get_memory(self, key: MemoryKey) -> MemoryRecord | None:
        return self._memories.get(key)

    async def list_memories(self, flt: MemoryFilter) -> list[MemoryRecord]:
        require_filter(flt)
        return sorted((r for r in self._memories.values() if matches(r, flt)),
                      key=lambda r: attrs.astuple(r.key))

    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        async with self._lock:
            staged = dict(self._memories)
            out = [self._capture_one(staged, w) for w in writes]
            self._memories = staged
            return out

    @staticmethod
    def _capture_one(rows: dict[MemoryKey, MemoryRecord], w: CaptureWrite) -> MemoryRecord:
        old = rows.get(w.key)
        if old is None:
            new = MemoryRecord(key=w.key, parent_channel_id=w.parent_channel_id,
                               persona_lineage_id=w.persona_lineage_id, messages=w.messages,
                               turns_since_refresh=w.counter_increment,
                               updated_at_ms=w.now_ms, rev=1)
        else:
            if is_expired(old, w.now_ms, crude_ttl_ms=w.crude_ttl_ms,
                          summary_ttl_ms=w.summary_ttl_ms):
                old = attrs.evolve(old, summary=None, categories={})
            new = attrs.evolve(
                old, messages=w.messages, updated_at_ms=w.now_ms, rev=old.rev + 1,
                turns_since_refresh=old.turns_since_refresh + w.counter_increment,
                persona_lineage_id=_keep(w.persona_lineage_id, old.persona_lineage_id),
                parent_channel_id=_keep(w.parent_channel_id, old.parent_channel_id))
        rows[w.key] = new
        return new

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        async with self._lock:
            staged = dict(self._memories)
            history = dict(self._revisions)
            out = []
            for w in writes:
                new = self._write_one(staged, w)
                if w.revision is not None:
                    note = w.revision
                    kept = [MemoryRevision(
                        key=w.key, rev=new.rev, summary=new.summary,
                        categories=dict(new.categories), author=note.author, actor=note.actor,
                        restored_from=note.restored_from, written_at_ms=w.now_ms),
                        *history.get(w.key, ())]
                    history[w.key] = kept[:note.keep]
                out.append(new)
            self._memories = staged
            self._revisions = history
            return out

    async def list_revisions(self, key: MemoryKey) -> list[MemoryRevision]:
        return list(self._revisions.get(key, ()))

    def _drop(self, keys: Iterable[MemoryKey]) -> None:
        """Delete rows and their revisions (call with the lock held)."""
        for k in keys:
            del self._memories[k]
            self._revisions.pop(k, None)

    @staticmethod
    def _write_one(rows: dict[MemoryKey, MemoryRecord], w: MemoryWrite) -> MemoryRecord:
        old = rows.get(w.key) or MemoryRecord(key=w.key, rev=0, updated_at_ms=w.now_ms)
        if old.rev and is_expired(old, w.now_ms, crude_ttl_ms=w.crude_ttl_ms,
                                  summary_ttl_ms=w.summary_ttl_ms):
            old = attrs.evolve(old, summary=None, categories={}, messages=())
        new = attrs.evolve(
            old,
            summary=w.summary if w.set_summary else old.summary,
            categories=dict(w.categories) if w.set_categories else old.categories,
            messages=() if w.clear_messages else old.messages,
            turns_since_refresh=0 if w.reset_counter else old.turns_since_refresh,
            last_refreshed_turn=old.last_refreshed_turn + (1 if w.reset_counter else 0),
            persona_lineage_id=_keep(w.persona_lineage_id, old.persona_lineage_id),
            parent_channel_id=_keep(w.parent_channel_id, old.parent_channel_id),
            updated_at_ms=w.now_ms, rev=old.rev + 1)
        rows[w.key] = new
        return new

    async def update_server_settings(self, server_id: str, changes: Mapping[str, object],
                                     *, now_ms: int) -> ServerSettings:
        check_setting_names(changes)
        async with self._lock:
            old = self._settings.get(server_id) or ServerSettings(server_id=server_id)
            new = attrs.evolve(old, updated_at_ms=now_ms, **changes)  # type: ignore[arg-type]
            self._settings[server_id] = new
            return new

    async def replace_categories(self, server_id: str, categories: Sequence[CategoryRecord],
                                 *, now_ms: int,
                                 clear_server_memories: bool) -> tuple[ServerSettings,
                                                                       list[MemoryKey]]:
        async with self._lock:
            old = self._settings.get(server_id) or ServerSettings(server_id=server_id)
            new = attrs.evolve(old, categories=tuple(sorted(categories, key=lambda c: c.position)),
                               updated_at_ms=now_ms)
            self._settings[server_id] = new
            removed = self._drop_server_rows(server_id) if clear_server_memories else []
            return new, removed

    async def change_private_channels(self, server_id: str, *,
                                      add: Collection[str] = frozenset(),
                                      remove: Collection[str] = frozenset(),
                                      now_ms: int) -> ServerSettings:
        added, removed = channel_id_set("add", add), channel_id_set("remove", remove)
        async with self._lock:
            old = self._settings.get(server_id) or ServerSettings(server_id=server_id)
            new = attrs.evolve(old, updated_at_ms=now_ms,
                               private_channel_ids=(old.private_channel_ids | added) - removed)
            self._settings[server_id] = new
            return new

    async def replace_server_config(self, server_id: str, changes: Mapping[str, object],
                                    categories: Sequence[CategoryRecord], *,
                                    now_ms: int) -> tuple[ServerSettings, list[MemoryKey]]:
        check_setting_names(changes)
        ordered = tuple(sorted(categories, key=lambda c: c.position))
        async with self._lock:
            old = self._settings.get(server_id) or ServerSettings(server_id=server_id)
            new = attrs.evolve(old, categories=ordered, updated_at_ms=now_ms,
                               **changes)  # type: ignore[arg-type]
            removed: list[MemoryKey] = []
            if old.categories != ordered:
                removed = self._drop_server_rows(server_id)
            self._settings[server_id] = new
            return new, removed

    def _drop_server_rows(self, server_id: str) -> list[MemoryKey]:
        removed = [k for k in self._memories
                   if k.scope_kind == "server" and k.server_id == server_id]
        self._drop(removed)
        return removed

    async def set_user_prefs(self, user_id: str, *, crossserver_opt_in: bool,
                             now_ms: int) -> UserPrefs:
        prefs = UserPrefs(user_id=user_id, crossserver_opt_in=crossserver_opt_in)
        self._prefs[user_id] = prefs
        return prefs

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        require_filter(flt)
        async with self._lock:
            removed = [k for k, r in self._memories.items() if matches(r, flt)]
            self._drop(removed)
            return removed

    async def purge_older_than(self, cutoff_ms: int, *, batch_size: int) -> int:
        async with self._lock:
            old = [k for k, r in self._memories.items() if r.updated_at_ms < cutoff_ms]
            self._drop(old[:batch_size])
            return min(len(old), batch_size)

    async def count_memories(self) -> int:
        return len(self._memories)

    # -- privacy requests and inventory (optional capabilities) -------------------
    async def rows_with_author(self, author_id: str) -> list[MemoryRecord]:
        return sorted((r for r in self._memories.values()
                       if any(m.author_id == author_id for m in r.messages)),
                      key=lambda r: attrs.astuple(r.key))

    async def replace_messages(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                               expected_rev: int) -> MemoryRecord | None:
        return await self._rewrite(key, messages, expected_rev, clear=False)

    async def _rewrite(self, key: MemoryKey, messages: Sequence[CrudeMessage],
                       expected_rev: int, *, clear: bool) -> MemoryRecord | None:
        """New lines for a row not written since ``expected_rev``; with
        ``clear`` its summary, categories and revisions go too."""
        async with self._lock:
            old = self._memories.get(key)
            if old is None or old.rev != expected_rev:
                return None
            new = attrs.evolve(old, messages=tuple(messages), rev=old.rev + 1)
            if clear:
                new = attrs.evolve(new, summary=None, categories={})
                self._revisions.pop(key, None)
            self._memories[key] = new
            return new

    async def delete_user_prefs(self, user_id: str) -> bool:
        return self._prefs.pop(user_id, None) is not None

    async def rows_mentioning(self, terms: Sequence[str]) -> list[MemoryRecord]:
        folded = [t.casefold() for t in terms if t]

        def holds(*texts: str | None) -> bool:
            return any(f in t.casefold() for t in texts if t for f in folded)

        def mentions(summary: str | None, categories: Mapping[str, str]) -> bool:
            return holds(summary, *categories.values())

        return sorted((r for k, r in self._memories.items()
                       if mentions(r.summary, r.categories)
                       or holds(*(m.content for m in r.messages))
                       or any(mentions(v.summary, v.categories) or holds(v.actor)
                              for v in self._revisions.get(k, ()))),
                      key=lambda r: attrs.astuple(r.key))

    async def clear_content(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                            expected_rev: int) -> MemoryRecord | None:
        return await self._rewrite(key, messages, expected_rev, clear=True)

    async def server_ids(self) -> list[str]:
        found = {k.server_id for k in self._memories if k.scope_kind == "server"}
        return sorted(found | set(self._settings))

    async def count_older_than(self, cutoff_ms: int) -> int:
        return sum(1 for r in self._memories.values() if r.updated_at_ms < cutoff_ms)


def _keep(new: str | None, old: str | None) -> str | None:
    return new if new is not None else old


def _factory(url: str, settings: Settings) -> MemoryAdapter:
    return MemoryAdapter(url, settings)


@hookimpl
def stm_register_storage_adapters() -> Iterable[StorageAdapterSpec]:
    return [StorageAdapterSpec(name="memory", schemes=("memory",), factory=_factory,
                               description="in-process dictionaries; nothing persists")]
