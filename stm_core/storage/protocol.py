"""The contract every storage adapter fulfils.

Adapters are async objects. The database is the source of truth: every write
method commits before it returns and returns the rows *as committed* (the
cache above the adapter is filled only from these). Counters change only in
SQL. A write method given several writes applies them in one transaction.

The core never calls an adapter from ``build_context`` once the cache is
warm; cold reads are bounded (a server's or a user's rows touched within the
longest TTL, plus point lookups). An adapter with :class:`BoundedReads` also
reads a big server's rows a bounded number at a time, newest first.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol, runtime_checkable

from stm_core.models import CrudeMessage
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    ChangeNotice,
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


@runtime_checkable
class AtomicServerEdits(Protocol):
    """Optional capability: server-setting edits that depend on what is stored,
    each done as one atomic step at the database.

    The admin API uses these when the adapter has them, so concurrent edits
    from several processes never lose one another. An adapter without them
    still works: the admin API then reads, changes and writes back (atomic
    within one process only) and imports a configuration in two transactions.
    The built-in adapters have both.
    """

    async def change_private_channels(self, server_id: str, *,
                                      add: Collection[str] = frozenset(),
                                      remove: Collection[str] = frozenset(),
                                      now_ms: int) -> ServerSettings:
        """Store ``(stored private channels | add) - remove`` in one atomic step,
        computed from the list as it is when the step runs (not as it was read)."""
        ...

    async def replace_server_config(self, server_id: str, changes: Mapping[str, object],
                                    categories: Sequence[CategoryRecord], *,
                                    now_ms: int) -> tuple[ServerSettings, list[MemoryKey]]:
        """Upsert ``changes`` (as :meth:`StorageAdapter.update_server_settings`)
        and replace the categories, all in one transaction.

        The server-scope memory rows of the server are deleted in the same
        transaction, and their keys returned, only when the categories stored
        when it runs differ from ``categories`` (position, label, description).
        """
        ...


@runtime_checkable
class BoundedReads(Protocol):
    """Optional capability: a server's newest rows, a bounded number, read
    from an index in order (a keyset read with a limit) rather than its
    whole load window.

    A store opened after a restart fills a big server's view, and the rows
    a build of one persona lineage may show, from these. Without it the
    store reads the whole window with
    :meth:`StorageAdapter.load_server_memories` and cuts it down
    (:func:`stm_core.storage.newest.newest_server_rows`), with the same
    answer and the cost of every row read. The built-in adapters have it.
    """

    async def newest_server_memories(self, reads: Sequence[NewestRows]
                                     ) -> list[list[MemoryRecord]]:
        """The rows of each read, in order, newest first as
        :class:`~stm_core.storage.records.NewestRows` says; all the reads
        see one state of the database (one snapshot where the backend has
        them)."""
        ...


@runtime_checkable
class UserErasure(Protocol):
    """Optional capability: find one author's lines, and the rows that may
    name a user, everywhere; remove them row by row; drop a user's
    preferences (privacy requests).

    The admin API's ``forget_user`` and ``export_user`` need it; an adapter
    without it keeps working for everything else, and those two calls raise
    :class:`~stm_core.errors.StorageError` naming the adapter.
    """

    async def rows_with_author(self, author_id: str) -> list[MemoryRecord]:
        """Every row (any scope) holding at least one line whose ``author_id``
        is ``author_id``, in key order."""
        ...

    async def replace_messages(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                               expected_rev: int) -> MemoryRecord | None:
        """Set the row's stored lines, only if its ``rev`` is still ``expected_rev``
        (one transaction). Returns the committed row (``rev`` raised, ``updated_at_ms``
        kept, so its TTL does not restart), or ``None`` when the row changed or
        is gone (the caller re-reads and tries again)."""
        ...

    async def delete_user_prefs(self, user_id: str) -> bool:
        """Delete the user's stored preferences; whether there were any."""
        ...

    async def rows_mentioning(self, terms: Sequence[str]) -> list[MemoryRecord]:
        """Every row (any scope) whose summary, category texts or lines, or
        any kept revision of it (its texts or its ``actor``), may hold one of
        ``terms``, in key order. A
        superset: at least every row holding a term as written, all lower
        case, all upper case or capitalised, ignoring the case of ASCII
        letters; the caller decides (:mod:`stm_core.admin.mentions`)."""
        ...

    async def clear_content(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                            expected_rev: int) -> MemoryRecord | None:
        """Set the row's stored lines, clear its summary and categories and
        delete its kept revisions, only if its ``rev`` is still
        ``expected_rev`` (one transaction). Returns the committed row (``rev``
        raised, ``updated_at_ms`` kept), or ``None`` when the row changed or
        is gone."""
        ...


@runtime_checkable
class StorageInventory(Protocol):
    """Optional capability: what operators list and preview (``stm server list``,
    ``stm janitor --dry-run``). Without it those commands raise
    :class:`~stm_core.errors.StorageError` naming the adapter."""

    async def server_ids(self) -> list[str]:
        """Servers with stored settings or server-scope memory rows, sorted."""
        ...

    async def count_older_than(self, cutoff_ms: int) -> int:
        """Rows the janitor would delete: ``updated_at_ms < cutoff_ms``."""
        ...


@runtime_checkable
class TimedPurge(Protocol):
    """Optional capability: how long the last ``purge_older_than`` batch held
    the database itself, without the time it waited behind other writes
    (queued for SQLite's one writer, say). The janitor sizes and paces its
    batches by it; without it, by each call's wall time, so other writes'
    work would make its batches smaller and its pauses longer."""

    #: Seconds; ``None`` before the first batch.
    last_purge_seconds: float | None


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
    one subscription open (see :mod:`stm_core.engine.invalidation`).
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


#: Told a write's outcome: the committed records, or ``None`` when it failed.
WriteReport = Callable[[list[MemoryRecord] | None], None]


class ReportedWrites(Protocol):
    """Optional capability: memory writes that report their outcome.

    Each method does what its plain twin does and also calls ``report``
    (unless ``None``) once, on the event loop, as soon as the outcome is
    known: before the caller resumes, and even when the caller was cancelled
    meanwhile (the write itself is not cancelled). A call that raises before
    its write was started does not call it. The store mirrors writes into its
    cache this way; without the capability it runs each write in a task of
    its own. See :func:`reports_write_outcomes` for when the store uses it.
    """

    async def capture_reported(self, writes: Sequence[CaptureWrite],
                               report: WriteReport | None) -> list[MemoryRecord]:
        ...

    async def write_memory_reported(self, writes: Sequence[MemoryWrite],
                                    report: WriteReport | None) -> list[MemoryRecord]:
        ...


def reports_write_outcomes(adapter: object) -> bool:
    """Whether the store may use ``adapter``'s reported writes: only when the
    ``_reported`` twin of ``capture`` (``write_memory``) is defined by the
    class that defines the plain method or by a subclass of it. A wrapper
    that forwards attributes to an adapter, or a subclass that overrides the
    plain method alone, keeps its own method in the path."""
    kind = type(adapter)
    for name in ("capture", "write_memory"):
        twin, plain = _defined_in(kind, f"{name}_reported"), _defined_in(kind, name)
        if twin is None or plain is None or not issubclass(twin, plain):
            return False
    return True


def _defined_in(kind: type, name: str) -> type | None:
    """The class in ``kind``'s MRO that defines ``name`` (not instance attributes)."""
    return next((k for k in kind.__mro__ if name in vars(k)), None)


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
