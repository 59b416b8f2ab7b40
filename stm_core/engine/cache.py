"""The bounded write-through cache above the storage adapter.

Rules (DESIGN, Storage):

* it is filled only from what the database returned (loads, and the rows a
  committed write returned), never from values computed in Python;
* a row replaces a cached one only if its ``rev`` is not older, so writes that
  finish out of order cannot roll the cache back;
* every change is versioned by the change counter (:meth:`MemoryCache.mark`):
  a caller takes a mark before its database call and hands it with what
  committed. A removal drops a cached row only if that row was mirrored before
  the removal's database call began (else the row may be newer than the
  delete), and a row or setting is installed only if no removal or change of
  its view was mirrored after its call began (else it may be older). When the
  order cannot be told, the view is dropped and reloads from the database. A
  row's ``rev`` cannot decide this alone: a deleted row written again starts
  at rev 1;
* a view remembers its load window (:meth:`MemoryView.covers`): a build
  whose window starts earlier (the clock stepped back) reloads it;
* every map is an LRU with a configured bound, and each view holds at most
  ``cache_max_rows_per_view`` rows (the newest) and as many known-absent
  keys, so memory stays flat however many servers, users and channels are
  touched; a server's view also keeps at most ``MAX_SCOPES_PER_VIEW``
  :class:`ScopedRows`, each of a bounded number of rows (see
  :mod:`stm_core.pipeline.recent`: ``SCOPE_ROWS``, deeper only for
  policies that hide rows without declaring them);
* each view keeps its rows in recency order (oldest first), so a build walks
  the newest rows and stops at the cap instead of sorting the whole server;
* with several processes on one database, other processes' writes arrive as
  change notices (:mod:`stm_core.engine.invalidation`); a safety expiry reloads views
  older than a maximum age, and a notice that drops a view bumps ``epoch`` so
  a load that was already running does not install what it read before.

Views are per server (settings; server-scope memories) and per user (prefs;
user-scope memories), because that is what one turn reads.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Generic, TypeVar

import attrs

from stm_core.storage.records import MemoryKey, MemoryRecord, ServerSettings, UserPrefs

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A dict bounded to ``maxsize`` entries; reads refresh recency.

    With a maximum age (:meth:`expire_after`), :meth:`get` treats an entry
    stored longer ago than that as missing and drops it.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self.evictions = 0
        self.expired = 0
        self._max_age_ms: int | None = None
        self._now_ms: Callable[[], int] | None = None
        self._stored_at: dict[K, int] = {}

    def expire_after(self, max_age_ms: int | None, now_ms: Callable[[], int]) -> None:
        self._max_age_ms = max_age_ms
        self._now_ms = now_ms
        self._stored_at.clear()
        if max_age_ms is not None:
            now = now_ms()
            self._stored_at.update(dict.fromkeys(self._data, now))

    def fresh(self, key: K) -> V | None:
        data = self._data
        value = data.get(key)
        if value is not None:
            if self._max_age_ms is not None and self._too_old(key):
                return None
            data.move_to_end(key)
        return value

    def _too_old(self, key: K) -> bool:
        assert self._now_ms is not None and self._max_age_ms is not None
        if self._now_ms() - self._stored_at.get(key, 0) <= self._max_age_ms:
            return False
        self.evict(key)
        self.expired += 1
        return True

    def peek(self, key: K) -> V | None:
        return self._data.get(key)

    def install(self, key: K, value: V) -> None:
        data = self._data
        data[key] = value
        data.move_to_end(key)
        if self._max_age_ms is not None:
            assert self._now_ms is not None
            self._stored_at[key] = self._now_ms()
        if len(data) > self.maxsize:
            oldest, _ = data.popitem(last=False)
            self._stored_at.pop(oldest, None)
            self.evictions += 1

    def evict(self, key: K) -> V | None:
        self._stored_at.pop(key, None)
        return self._data.pop(key, None)

    def drop_all(self) -> None:
        self._data.clear()
        self._stored_at.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def values(self) -> Iterator[V]:
        return iter(list(self._data.values()))


class BoundedKeySet(Generic[K]):
    """A set that forgets its oldest entries beyond ``maxsize``."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._keys: dict[K, None] = {}

    def hold(self, key: K) -> None:
        keys = self._keys
        keys.pop(key, None)
        keys[key] = None
        if len(keys) > self.maxsize:
            del keys[next(iter(keys))]

    def unhold(self, key: K) -> None:
        self._keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._keys))

    def __len__(self) -> int:
        return len(self._keys)


class MemoryView:
    """Memory rows of one server (server scope) or one user (user scope).

    ``records`` holds the rows updated within the load window plus rows
    written or probed since, by key. Their order is kept beside it, in two
    lists sorted by ``updated_at_ms``, oldest first (the times, and the keys
    in the same places); rows with equal times are in the order of their
    keys' fields. That order is the same in every process whatever order
    rows arrived in (a load from the database has none, and each process
    hears other processes' writes in its own order), so two processes, or
    one before and after a reload, show the same rows in the same order. A
    write finds its place by a binary search and goes in with one list
    insert, however far out of order it was stamped (another process whose
    clock is behind). At most ``max_rows`` are kept: past that the oldest go, and
    ``dropped_through`` says up to which place in that order rows may be
    missing (``dropped_through_ms`` up to when; a probe of such a key asks the
    database): every row dropped stands at or below it, every row kept above
    it, so a tie is never ambiguous. A view made from a bounded read (``keep``:
    the newest rows of its scope only) keeps at most ``keep`` of the rows it
    is given and marks the rest dropped the same way: below
    ``dropped_through`` it covers nothing it was not given or written since,
    above it every row. ``absent`` remembers keys probed and not
    found (bounded too), so a warm turn on a channel without a row makes no
    database call.

    A server's view may also hold a few :class:`ScopedRows`, one per scope
    (persona lineage and channels hidden) a build asked for (:meth:`scoped`):
    the rows such a build may show, kept in step with every write the view
    hears.
    """

    def __init__(self, records: Iterable[MemoryRecord] = (), *, max_rows: int = 1000,
                 keep: int | None = None) -> None:
        self.max_rows = max_rows
        # Stable: a key given twice at one time keeps the later row (below).
        ordered = sorted(records, key=place)
        self.records: dict[MemoryKey, MemoryRecord] = {r.key: r for r in ordered}
        if len(self.records) < len(ordered):  # a key given twice: its last row stands
            ordered = _each_key_once(ordered, self.records)
        self._times = [r.updated_at_ms for r in ordered]
        self._keys = [r.key for r in ordered]
        self.absent: BoundedKeySet[MemoryKey] = BoundedKeySet(max_rows)
        #: Rows at or below this place (see :func:`place`) may have been
        #: dropped for the bound.
        self.dropped_through: Place | None = None
        self._scopes: LRU[Scope, ScopedRows] = LRU(MAX_SCOPES_PER_VIEW)
        #: Scopes asked for and not kept, by the kept scope found for them.
        self._walked_instead: LRU[Scope, Scope] = LRU(4 * MAX_SCOPES_PER_VIEW)
        #: Change marks (:meth:`MemoryCache.mark`): when each row written since
        #: the view was made reached it; the loaded rows count as ``made_at``.
        self.marks: dict[MemoryKey, int] = {}
        self.made_at = 0
        #: The mark of the newest removal mirrored into this view.
        self.removed_at = 0
        #: The load window: rows updated before this were not read (``None``:
        #: every row was). A build whose window starts earlier (the clock
        #: stepped back) cannot be answered from this view.
        self.loaded_since_ms: int | None = None
        self._trim(max_rows if keep is None else min(keep, max_rows))

    @property
    def dropped_through_ms(self) -> int | None:
        """Rows updated at or before this may have been dropped for the bound."""
        dropped = self.dropped_through
        return None if dropped is None else dropped[0]

    def apply(self, record: MemoryRecord, mark: int = 0) -> None:
        """Hold ``record`` unless the view has a newer rev of its key.
        Unversioned: :meth:`MemoryCache.apply` decides whether it may."""
        key = record.key
        records = self.records
        current = records.get(key)
        self.absent.unhold(key)
        if current is not None:
            if record.rev < current.rev:
                return
            self._unplace(current)
        self._insert(record, mark)
        if self._scopes:  # a big server's scopes (most views have none)
            for scoped in self._scopes.values():
                scoped.apply(record, mark)

    def _insert(self, record: MemoryRecord, mark: int = 0) -> None:
        key = record.key
        self.records[key] = record
        self.marks[key] = mark
        at = record.updated_at_ms
        times, keys = self._times, self._keys
        if not times or times[-1] < at:  # the usual write: newer than every row
            index = len(times)
        else:
            index = bisect_left(times, at)
            if index < len(times) and times[index] == at:  # rows of its time stand by key
                mine = _tie_order(key)
                while index < len(times) and times[index] == at and _tie_order(keys[index]) < mine:
                    index += 1
        times.insert(index, at)
        keys.insert(index, key)
        self._trim()

    def forget_row(self, key: MemoryKey) -> None:
        """Drop ``key``'s row and note it absent. Unversioned: see :meth:`mirror_removal`."""
        self.let_go(key)
        self.absent.hold(key)
        if self._scopes:
            for scoped in self._scopes.values():
                scoped.forget_row(key)

    def let_go(self, key: MemoryKey) -> None:
        """Let ``key``'s row go (it is not known absent: it moved elsewhere)."""
        record = self.records.pop(key, None)
        if record is not None:
            self.marks.pop(key, None)
            self._unplace(record)

    def covers(self, since_ms: int) -> bool:
        """Every row updated at or after ``since_ms`` was read into this view
        (those the bound dropped since are told by :attr:`dropped_through`)."""
        loaded = self.loaded_since_ms
        return loaded is None or loaded <= since_ms

    def scoped(self, scope: Scope) -> ScopedRows | None:
        """The rows kept for builds of ``scope``, or else for a scope of its
        lineage hiding fewer channels (a build of ``scope`` walks those and
        passes the rest by), the one hiding most; ``None`` when none is kept."""
        scopes = self._scopes
        exact = scopes.fresh(scope)
        if exact is not None or not scopes:
            return exact
        seen = self._walked_instead.fresh(scope)  # the usual build of such a scope
        if seen is not None and (found := scopes.fresh(seen)) is not None:
            return found
        lineage, hidden = scope
        best: ScopedRows | None = None
        for kept in scopes.values():
            if (kept.lineage == lineage and kept.hidden <= hidden
                    and (best is None or len(kept.hidden) > len(best.hidden))):
                best = kept
        if best is None:
            return None
        self._walked_instead.install(scope, best.scope)
        return scopes.fresh(best.scope)

    def hidden_kept(self, lineage: str | None) -> list[frozenset[str]]:
        """The hidden channels of each scope of ``lineage`` kept, most recently used last."""
        return [kept.hidden for kept in self._scopes.values() if kept.lineage == lineage]

    def holders(self) -> list[MemoryView]:
        """This view and the views of its scopes: every place a row of it is held."""
        if not self._scopes:
            return [self]
        return [self, *(h for s in self._scopes.values() for h in s.holders())]

    def add_scope(self, scoped: ScopedRows) -> None:
        """Keep ``scoped`` in step with this view's writes from now on (the
        least recently used scope goes past ``MAX_SCOPES_PER_VIEW``)."""
        self._scopes.install(scoped.scope, scoped)

    def rows_held(self) -> int:
        """Rows this view holds, its scopes' included (each scope bounded by
        the rows it was read for)."""
        return len(self.records) + sum(map(len, self._scopes.values()))

    def keys_older_than(self, cutoff_ms: int) -> list[MemoryKey]:
        """Keys of the rows held (its scopes' included) updated before ``cutoff_ms``."""
        return _keys_older_than(self.holders(), cutoff_ms)

    def holds_since(self, since_ms: int) -> bool:
        """A row updated at or after ``since_ms`` is held."""
        times = self._times
        return bool(times) and times[-1] >= since_ms

    def newest_since(self, since_ms: int) -> Iterator[MemoryRecord]:
        """The rows updated at or after ``since_ms``, newest first; older rows
        are not touched."""
        start = bisect_left(self._times, since_ms)
        return map(self.records.__getitem__, islice(reversed(self._keys),
                                                    len(self._keys) - start))

    def mark_of(self, key: MemoryKey) -> int:
        """When the row held for ``key`` reached this view (its change mark)."""
        return self.marks.get(key, self.made_at)

    def mirrored_after(self, key: MemoryKey, since: int) -> bool:
        """A row held for ``key`` (here or in a scope) reached it after mark ``since``."""
        return _mirrored_after(self.holders(), key, since)

    def mirror_removal(self, key: MemoryKey, since: int, mark: int) -> bool:
        """Mirror the delete of ``key`` whose database call began at mark
        ``since``; ``False`` (and nothing changed) when a held row may be
        newer than the delete."""
        if self.mirrored_after(key, since):
            return False
        self.forget_row(key)
        self.removed_at = max(self.removed_at, mark)
        return True

    def newest_first(self) -> Iterator[MemoryRecord]:
        """The rows, newest first (a build stops after the few it shows)."""
        return map(self.records.__getitem__, reversed(self._keys))

    def oldest_first(self) -> list[MemoryRecord]:
        """The rows, oldest first."""
        return list(map(self.records.__getitem__, self._keys))

    def may_lack(self, updated_at_ms: int) -> bool:
        """A row updated then may be missing because the bound dropped it."""
        dropped = self.dropped_through_ms
        return dropped is not None and updated_at_ms <= dropped

    def _unplace(self, record: MemoryRecord) -> None:
        """Take ``record``'s key out of the order (found by its time, then
        among the rows of that same time)."""
        key, keys = record.key, self._keys
        place = bisect_left(self._times, record.updated_at_ms)
        while keys[place] is not key:
            place += 1
        del self._times[place], keys[place]

    def _trim(self, bound: int | None = None) -> None:
        times, keys = self._times, self._keys
        excess = len(keys) - (self.max_rows if bound is None else bound)
        if excess <= 0:
            return
        oldest = (times[excess - 1], _tie_order(keys[excess - 1]))
        marks = self.marks
        for key in keys[:excess]:
            del self.records[key]
            marks.pop(key, None)
        del times[:excess], keys[:excess]
        self.lacks_from(oldest)

    def lacks_from(self, dropped: Place) -> None:
        """Rows at or below ``dropped`` may be missing (dropped for the
        bound, or left out by the bounded read that filled the view)."""
        current = self.dropped_through
        self.dropped_through = dropped if current is None else max(current, dropped)


def _each_key_once(ordered: list[MemoryRecord], kept: Mapping[MemoryKey, MemoryRecord]
                   ) -> list[MemoryRecord]:
    """``ordered`` with only the row ``kept`` holds for each key."""
    out: list[MemoryRecord] = []
    placed: set[MemoryKey] = set()
    for record in ordered:
        if kept[record.key] is record and record.key not in placed:
            placed.add(record.key)
            out.append(record)
    return out


def _mirrored_after(holders: Iterable[MemoryView], key: MemoryKey, since: int) -> bool:
    return any(key in h.records and h.mark_of(key) > since for h in holders)


def _keys_older_than(holders: Iterable[MemoryView], cutoff_ms: int) -> list[MemoryKey]:
    return [k for h in holders for k, r in h.records.items() if r.updated_at_ms < cutoff_ms]


def _tie_order(key: MemoryKey) -> tuple[str, str, str, str, str]:
    """Where rows of equal times stand among themselves (see :class:`MemoryView`)."""
    return (key.scope_kind, key.server_id, key.user_id, key.channel_id, key.persona_id)


#: A row's place in a view's order: its time, then its key's fields.
Place = tuple[int, tuple[str, str, str, str, str]]


def place(record: MemoryRecord) -> Place:
    """Where ``record`` stands in every view's order (rows ascend by it)."""
    return (record.updated_at_ms, _tie_order(record.key))


#: A build's scope: the persona lineage it shows (``None``: every one) and
#: the channels of the server its visibility policies hide wholesale.
Scope = tuple[str | None, frozenset[str]]

#: Scopes a server's view keeps rows for (the least recently used goes).
MAX_SCOPES_PER_VIEW = 64


def scope_half(max_rows: int) -> int:
    """The bound of each half (rows with a summary, rows without) of a
    scope of ``max_rows``."""
    return max(1, max_rows // 2)


class ScopedRows:
    """The rows of one server's view that builds of one scope may show,
    whatever other lineages, hidden channels or rows that expired stand
    above them.

    A build of lineage ``L`` shows only rows of ``L`` (every row when ``L``
    is ``None``) that have not expired, and none of a channel its policies
    hide wholesale (``hidden``: the channel, or the channel its thread hangs
    under; see :func:`hookspecs.types.hides_channels`). Those are kept
    here in two views, the rows with a summary and those without, each in
    the view order and each bounded to half the view's bound, so a build
    walks the two newest first and skips what expired by one binary search
    (crude rows expire first, so they may stand above summaries that still
    show). Rows without a summary that had already expired when the scope
    was made (``crude_since_ms``) are left out (a build on a clock that
    stepped back before it cannot trust the scope, and reads). Rows come in
    by :meth:`apply`, as into a view, under the same change marks: a scope
    is read through :meth:`MemoryCache.new_scope` with the changes of its
    read replayed (:meth:`MemoryCache.end_load`), and a write replaces a row
    a scope holds by :meth:`MemoryCache.apply`'s rule, not by ``rev`` alone.
    """

    def __init__(self, scope: Scope, rows: Iterable[MemoryRecord] = (), *,
                 crude_since_ms: int, max_rows: int) -> None:
        self.scope = scope
        self.lineage, self.hidden = scope
        self.crude_since_ms = crude_since_ms
        self.max_rows = max_rows
        half = scope_half(max_rows)
        taken = [r for r in rows if self._takes(r)]
        self.summaries = MemoryView([r for r in taken if r.summary], max_rows=half)
        self.crude = MemoryView([r for r in taken if not r.summary], max_rows=half)
        #: The newest removal mirrored into the scope while it was read (see
        #: :meth:`MemoryCache.new_scope`).
        self.removed_at = 0

    def holders(self) -> tuple[MemoryView, MemoryView]:
        return self.summaries, self.crude

    def mirrored_after(self, key: MemoryKey, since: int) -> bool:
        return _mirrored_after(self.holders(), key, since)

    def keys_older_than(self, cutoff_ms: int) -> list[MemoryKey]:
        return _keys_older_than(self.holders(), cutoff_ms)

    def mirror_removal(self, key: MemoryKey, since: int, mark: int) -> bool:
        """As :meth:`MemoryView.mirror_removal`."""
        if self.mirrored_after(key, since):
            return False
        self.forget_row(key)
        self.removed_at = max(self.removed_at, mark)
        return True

    def lacks_from(self, dropped: Place) -> None:
        """The bounded read that filled these rows stopped above ``dropped``
        (the first row it left out): rows of either kind may be missing
        from there down."""
        self.summaries.lacks_from(dropped)
        self.crude.lacks_from(dropped)

    def _takes(self, record: MemoryRecord) -> bool:
        lineage, hidden = self.lineage, self.hidden
        if hidden and (record.key.channel_id in hidden or (
                record.parent_channel_id is not None and record.parent_channel_id in hidden)):
            return False
        return ((lineage is None or record.persona_lineage_id == lineage)
                and (bool(record.summary) or record.updated_at_ms >= self.crude_since_ms))

    def apply(self, record: MemoryRecord, mark: int = 0) -> None:
        """Hold ``record`` if builds of the scope may show it. Unversioned:
        :meth:`MemoryCache.apply` decided that it may replace what is held."""
        self.forget_row(record.key)
        if self._takes(record):
            (self.summaries if record.summary else self.crude).apply(record, mark)

    def forget_row(self, key: MemoryKey) -> None:
        self.summaries.let_go(key)
        self.crude.let_go(key)

    def newest_first(self, *, summary_since_ms: int, crude_since_ms: int
                     ) -> Iterator[MemoryRecord]:
        """The rows not expired at those bounds, newest first in view order."""
        summaries, crude = self.summaries, self.crude
        if not crude.holds_since(crude_since_ms):  # one kind only: no merge
            return summaries.newest_since(summary_since_ms)
        if not summaries.holds_since(summary_since_ms):
            return crude.newest_since(crude_since_ms)
        return heapq.merge(summaries.newest_since(summary_since_ms),
                           crude.newest_since(crude_since_ms), key=place, reverse=True)

    def __len__(self) -> int:
        return len(self.summaries.records) + len(self.crude.records)


@attrs.define
class UserView:
    prefs: UserPrefs
    memories: MemoryView


@attrs.define
class CacheStats:
    hits: int = 0
    misses: int = 0
    loads: int = 0
    stores: int = 0
    invalidations: int = 0
    #: Change notices from other processes applied, and whole-cache drops.
    remote_changes: int = 0
    flushes: int = 0

    @property
    def hit_rate(self) -> str:
        total = self.hits + self.misses
        return f"{100 * self.hits / total:.1f}%" if total else "0%"


@attrs.frozen
class _Written:
    """A row mirrored while its view loaded (replayed onto the loaded view)."""

    record: MemoryRecord
    since: int
    mark: int


@attrs.frozen
class _Removed:
    """A delete mirrored while its view loaded."""

    key: MemoryKey
    since: int
    mark: int


@attrs.frozen
class _Purged:
    """A purge of rows untouched since ``cutoff_ms``, mirrored while a view loaded."""

    cutoff_ms: int
    since: int
    mark: int


_Change = _Written | _Removed | _Purged

#: What a load's changes replay onto: a view, or a scope read beside it.
Rows = MemoryView | ScopedRows


class ChangeMarks:
    """The mark of the last change of each server's settings (or each user's
    preferences). Bounded: past ``maxsize`` names it starts over with a floor,
    and every name counts as changed at the floor (a put that began earlier
    is refused once, which only costs a reload)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._marks: dict[str, int] = {}
        self.floor = 0

    def note_change(self, ident: str, mark: int) -> None:
        if len(self._marks) >= self.maxsize and ident not in self._marks:
            self.restart(mark)
        self._marks[ident] = mark

    def restart(self, mark: int) -> None:
        self._marks.clear()
        self.floor = mark

    def changed_since(self, ident: str, since: int) -> bool:
        return max(self._marks.get(ident, 0), self.floor) > since


class MemoryCache:
    """Settings, server memories and user state, each in its own LRU.

    Every change takes a ``since`` mark (:meth:`mark`, taken before its
    database call); see the module's rules.
    """

    def __init__(self, *, max_servers: int, max_users: int,
                 max_rows_per_view: int = 1000) -> None:
        self.max_rows_per_view = max_rows_per_view
        self.settings: LRU[str, ServerSettings] = LRU(max_servers)
        self.servers: LRU[str, MemoryView] = LRU(max_servers)
        self.users: LRU[str, UserView] = LRU(max_users)
        self.stats = CacheStats()
        # Views being loaded: changes that commit meanwhile are replayed onto
        # the loaded view before it is installed, so a load never hides them.
        # A scope's rows load beside its server's view: each load of one
        # view (part ``None``) or scope (part: the scope) has its own list.
        self._loading: dict[tuple[str, str], dict[Scope | None, list[_Change]]] = {}
        #: Moves whenever views are dropped for being possibly stale; a load
        #: that started under an older epoch returns its value uncached.
        self.epoch = 0
        self._mark = 0
        #: The newest removal anywhere: a view made later takes no row whose
        #: write began before it.
        self._removed_at = 0
        #: The newest purge: rows untouched since ``_purged_before_ms`` whose
        #: write or read began before ``_purged_at`` may be gone.
        self._purged_before_ms = 0
        self._purged_at = 0
        self.settings_marks = ChangeMarks(4 * max_servers)
        self.prefs_marks = ChangeMarks(4 * max_users)

    def mark(self) -> int:
        """The next change mark: take one before a database call, and give it
        as ``since`` with what the call returned."""
        self._mark += 1
        return self._mark

    def new_view(self, rows: Iterable[MemoryRecord], *, since_ms: int | None = None,
                 keep: int | None = None) -> MemoryView:
        """A view of rows loaded from ``since_ms`` on, bounded like every
        other (make it right after the load's read: its rows count as
        mirrored now). ``keep``: the read returned only the newest rows of
        the scope, at most ``keep + 1``; the view holds the newest ``keep``
        and knows it may lack every row from the next one down
        (``dropped_through``), as if its bound had dropped them. Rows written
        later fill it up to its bound."""
        view = MemoryView(rows, max_rows=self.max_rows_per_view, keep=keep)
        view.loaded_since_ms = since_ms
        view.made_at = self.mark()
        view.removed_at = self._removed_at
        return view

    def new_scope(self, scope: Scope, rows: Iterable[MemoryRecord], *, crude_since_ms: int,
                  max_rows: int) -> ScopedRows:
        """A scope of loaded rows (made right after the read, as :meth:`new_view`)."""
        scoped = ScopedRows(scope, rows, crude_since_ms=crude_since_ms, max_rows=max_rows)
        made_at = self.mark()
        for holder in scoped.holders():
            holder.made_at = made_at
        scoped.removed_at = self._removed_at
        return scoped

    def expire_after(self, max_age_ms: int | None, now_ms: Callable[[], int]) -> None:
        """Reload views older than ``max_age_ms`` (``None``: never)."""
        for lru in (self.settings, self.servers, self.users):
            lru.expire_after(max_age_ms, now_ms)

    @staticmethod
    def _scope_of(key: MemoryKey) -> tuple[str, str]:
        return ("server", key.server_id) if key.scope_kind == "server" else ("user", key.user_id)

    def _view_for(self, key: MemoryKey) -> MemoryView | None:
        if key.scope_kind == "server":
            return self.servers.peek(key.server_id)
        return self._user_memories(key.user_id)

    def apply(self, records: Iterable[MemoryRecord], since: int) -> None:
        """Mirror rows committed (or read) by a database call that began at
        mark ``since`` into whichever cached view holds their scope."""
        for record in records:
            key = record.key
            self._mark = mark = self._mark + 1
            view = self._view_for(key)
            if view is not None:
                if self._take(view, record, since, mark):
                    self.stats.stores += 1
                else:
                    self.drop_scopes([key])
            for pending in self._loading.get(self._scope_of(key), {}).values():
                pending.append(_Written(record, since, mark))

    def _take(self, view: Rows, record: MemoryRecord, since: int, mark: int) -> bool:
        """Put ``record`` (from a call that began at ``since``) into ``view``
        and its scopes; ``False`` when it cannot be ordered against what they
        saw: a removal mirrored after its call began (the row may predate
        it), or a row of a higher rev mirrored after its call began (an older
        write of the same row, or the row deleted and written anew: its rev
        restarts). A higher rev held from before the call began was deleted
        and written anew since: it is forgotten, wherever it is held (a scope
        may hold a row its view dropped)."""
        if not (view.removed_at < since and (record.updated_at_ms >= self._purged_before_ms
                                             or self._purged_at < since)):
            return False
        key, rev = record.key, record.rev
        superseded = False
        for holder in view.holders():
            current = holder.records.get(key)
            if current is not None and rev < current.rev:
                if holder.mark_of(key) > since:
                    return False
                superseded = True
        if superseded:
            view.forget_row(key)
        view.apply(record, mark)
        return True

    def forget_rows(self, keys: Iterable[MemoryKey], since: int) -> None:
        """Mirror rows deleted by a database call that began at mark ``since``:
        a cached row mirrored after that may be newer than the delete, so
        its view is dropped instead."""
        for key in keys:
            self._removed_at = mark = self.mark()
            view = self._view_for(key)
            if view is not None:
                if not view.mirror_removal(key, since, mark):
                    self.drop_scopes([key])
                self.stats.invalidations += 1
            for pending in self._loading.get(self._scope_of(key), {}).values():
                pending.append(_Removed(key, since, mark))

    def note_absent(self, key: MemoryKey) -> None:
        """A probe found no row for ``key``: noted absent, unless the view holds
        a row for it (mirrored while the probe read, which must not hide it).
        A row applied later clears the note."""
        view = self._view_for(key)
        if view is not None and key not in view.records:
            view.absent.hold(key)

    def begin_load(self, kind: str, ident: str, part: Scope | None = None) -> None:
        """A load of ``kind``'s view ``ident`` (or of its scope ``part``)
        begins: changes of it mirrored from now on are kept for :meth:`end_load`."""
        self._loading.setdefault((kind, ident), {}).setdefault(part, [])

    def end_load(self, kind: str, ident: str, view: Rows | None,
                 part: Scope | None = None) -> bool:
        """Replay what committed during the load onto ``view`` (if any).
        ``False`` when a change cannot be ordered against the load's read:
        then the epoch moves, so the loaded view is not installed."""
        loads = self._loading.get((kind, ident), {})
        pending = loads.pop(part, [])
        if not loads:
            self._loading.pop((kind, ident), None)
        if view is None:
            return False
        for change in pending:
            if not self._replay(view, change):
                self.epoch += 1
                self.stats.invalidations += 1
                return False
        return True

    def _replay(self, view: Rows, change: _Change) -> bool:
        if isinstance(change, _Written):
            return self._take(view, change.record, change.since, change.mark)
        if isinstance(change, _Removed):
            return view.mirror_removal(change.key, change.since, change.mark)
        stale = view.keys_older_than(change.cutoff_ms)
        return all([view.mirror_removal(k, change.since, change.mark) for k in stale])

    def _user_memories(self, user_id: str) -> MemoryView | None:
        user = self.users.peek(user_id)
        return user.memories if user is not None else None

    def put_settings(self, settings: ServerSettings, since: int) -> None:
        """Mirror settings committed (or read) by a call that began at mark
        ``since``; dropped instead when another change of them was mirrored
        after that (which of the two is newer is unknown)."""
        server_id = settings.server_id
        if self.settings_marks.changed_since(server_id, since):
            self.drop_settings(server_id)
            return
        self.settings_marks.note_change(server_id, self.mark())
        self.settings.install(server_id, settings)

    def put_prefs(self, prefs: UserPrefs, since: int) -> None:
        """Mirror preferences, as :meth:`put_settings` mirrors settings."""
        user_id = prefs.user_id
        if self.prefs_marks.changed_since(user_id, since):
            self.drop_user(user_id)
            return
        self.prefs_marks.note_change(user_id, self.mark())
        user = self.users.peek(user_id)
        if user is not None:
            user.prefs = prefs

    def forget_older_than(self, cutoff_ms: int, since: int) -> None:
        """Mirror a purge that began at mark ``since``: forget cached rows
        untouched since ``cutoff_ms``."""
        self._purged_at = mark = self.mark()
        self._purged_before_ms = max(self._purged_before_ms, cutoff_ms)
        for loads in self._loading.values():
            for pending in loads.values():
                pending.append(_Purged(cutoff_ms, since, mark))
        stale: list[MemoryKey] = []
        for view in self.servers.values():
            stale += view.keys_older_than(cutoff_ms)
        for user in self.users.values():
            stale += [k for k, r in user.memories.records.items() if r.updated_at_ms < cutoff_ms]
        if stale:
            self.forget_rows(stale, since)

    def cached_record(self, key: MemoryKey) -> MemoryRecord | None:
        view = self._view_for(key)
        return view.records.get(key) if view is not None else None

    def holds_scope(self, key: MemoryKey) -> bool:
        """A cached or loading view would show ``key``'s row."""
        return self._view_for(key) is not None or self._scope_of(key) in self._loading

    def drop_scopes(self, keys: Iterable[MemoryKey]) -> None:
        """Drop the views holding ``keys`` (their rows' state is unknown: a
        write failed without saying whether it committed, or another process
        changed them); they reload from the database on next use."""
        for key in keys:
            if key.scope_kind == "server":
                self.servers.evict(key.server_id)
            else:
                self.users.evict(key.user_id)
        self.epoch += 1
        self.stats.invalidations += 1

    def drop_settings(self, server_id: str) -> None:
        self.settings_marks.note_change(server_id, self.mark())
        self.settings.evict(server_id)
        self.epoch += 1
        self.stats.invalidations += 1

    def drop_user(self, user_id: str) -> None:
        self.prefs_marks.note_change(user_id, self.mark())
        self.users.evict(user_id)
        self.epoch += 1
        self.stats.invalidations += 1

    def drop_all(self) -> None:
        """Drop everything (its state is unknown); what any call that began
        before now read or wrote is not installed."""
        self._removed_at = mark = self.mark()
        self.settings_marks.restart(mark)
        self.prefs_marks.restart(mark)
        self.settings.drop_all()
        self.servers.drop_all()
        self.users.drop_all()
        self.epoch += 1
        self.stats.invalidations += 1

    def size(self) -> int:
        return len(self.settings) + len(self.servers) + len(self.users)
