"""The contract every storage adapter fulfils.

Adapters are async objects. The database is the source of truth: every write
method commits before it returns and returns the rows *as committed* (the
cache above the adapter is filled only from these). Counters change only in
SQL. A write method given several writes applies them in one transaction.

The core never calls an adapter from ``build_context`` once the cache is
warm; cold reads are bounded (a server's or a user's rows touched within the
longest TTL, plus point lookups).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    ChangeNotice,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryRevision,
    MemoryWrite,
    SchemaStatus,
    ServerSettings,
    UserPrefs,
)


@runtime_checkable
class StorageAdapter(Protocol):
    """Async storage behind the cache. See :mod:`stm_core.testing.conformance`."""

    #: Short name for logs and ``stm plugins`` (e.g. ``"sqlite"``).
    name: str

    async def setup(self) -> SchemaStatus:
        """Create or upgrade the schema; idempotent and safe to call twice."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads. Pending writes finish first."""
        ...

    # -- reads -------------------------------------------------------------
    async def load_server_settings(self, server_id: str) -> ServerSettings:
        """The server's settings and categories; defaults when it has none."""
        ...

    async def load_server_memories(self, server_id: str, *,
                                   updated_since_ms: int) -> list[MemoryRecord]:
        """Server-scope rows of ``server_id`` updated at or after the bound."""
        ...

    async def load_user_prefs(self, user_id: str) -> UserPrefs:
        ...

    async def load_user_memories(self, user_id: str, *,
                                 updated_since_ms: int) -> list[MemoryRecord]:
        """User-scope rows of ``user_id`` (all servers and DMs) updated since the bound."""
        ...

    async def get_memory(self, key: MemoryKey) -> MemoryRecord | None:
        ...

    async def list_memories(self, flt: MemoryFilter) -> list[MemoryRecord]:
        """Rows matching the filter (admin views). An empty filter is an error."""
        ...

    # -- per-turn writes ---------------------------------------------------
    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        """Apply crude captures in one transaction; rows returned in order."""
        ...

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        """Apply summary/category writes in one transaction; rows returned in order."""
        ...

    # -- admin writes --------------------------------------------------------
    async def update_server_settings(self, server_id: str, changes: Mapping[str, object],
                                     *, now_ms: int) -> ServerSettings:
        """Upsert only the given columns (names from ``SERVER_SETTING_FIELDS``)."""
        ...

    async def replace_categories(self, server_id: str, categories: Sequence[CategoryRecord],
                                 *, now_ms: int,
                                 clear_server_memories: bool) -> tuple[ServerSettings,
                                                                       list[MemoryKey]]:
        """Replace all categories in one transaction.

        With ``clear_server_memories`` the server-scope memory rows of the server
        are deleted in the same transaction; their keys are returned.
        """
        ...

    async def set_user_prefs(self, user_id: str, *, crossserver_opt_in: bool,
                             now_ms: int) -> UserPrefs:
        ...

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        """Delete matching rows; returns the keys removed. An empty filter is an error."""
        ...

    async def purge_older_than(self, cutoff_ms: int, *, batch_size: int) -> int:
        """Delete at most ``batch_size`` rows with ``updated_at_ms < cutoff_ms``.

        Returns how many were deleted; the janitor calls it until it returns 0.
        """
        ...

    async def count_memories(self) -> int:
        """Number of memory rows (operators, janitor progress)."""
        ...


class Subscription(Protocol):
    """A live connection receiving other processes' change notices."""

    async def check(self, timeout_s: float) -> None:
        """Prove the connection still works (raise if it does not)."""
        ...

    async def close(self) -> None:
        ...


@runtime_checkable
class ChangeFeed(Protocol):
    """Optional capability of an adapter shared by several processes.

    Its writes announce what they changed, in the same transaction, and
    :meth:`subscribe` delivers other writers' announcements. The store keeps
    one subscription open (see :mod:`stm_core.invalidation`).
    """

    #: Stamped on this adapter's announcements, so the store can skip its own.
    instance_id: str

    @property
    def announces_changes(self) -> bool:
        """Whether writes announce changes (and subscribing makes sense)."""
        ...

    async def subscribe(self, on_notice: Callable[[ChangeNotice], None],
                        on_lost: Callable[[], None]) -> Subscription:
        """Connect and listen. ``on_lost`` is called when the connection dies."""
        ...


@runtime_checkable
class MemoryHistory(Protocol):
    """Optional capability: revisions of summary and category writes.

    An adapter that has it honours :attr:`MemoryWrite.revision
    <stm_core.storage.records.MemoryWrite.revision>`: in the write's own
    transaction it stores the row's new summary and categories as a revision
    numbered with the row's new ``rev``, then deletes all but the newest
    ``keep`` revisions of that row. Deleting a row (clearing, forgetting, the
    janitor) deletes its revisions in the same transaction. Adapters without
    it ignore the note; the admin history calls then say history is not kept.
    """

    async def list_revisions(self, key: MemoryKey) -> list[MemoryRevision]:
        """The row's kept revisions, newest first (empty for no row)."""
        ...


def keeps_history(adapter: object) -> bool:
    return isinstance(adapter, MemoryHistory)
