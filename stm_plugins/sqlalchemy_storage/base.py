"""The storage contract in SQL, shared by the SQLite and PostgreSQL backends.

Each protocol method turns its records into a short list of :class:`Step`\\ s
(compiled statement, parameters, what to fetch). A backend runs a list either
as one read or as one write transaction, and the method turns the rows it got
back into records. Backends differ only in how steps reach the driver.
"""

from __future__ import annotations

import abc
import enum
import os
import sys
import time
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from stm_core._util import telemetry
from stm_core._util.lazy_import import lazy_module
from stm_core.errors import StorageError, ValidationError
from stm_core.models import CrudeMessage
from stm_core.settings import Settings
from stm_core.storage.records import (
    SERVER_SETTING_FIELDS,
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
from stm_core.text.memo import MAX_CHARS, TextMemo
from stm_plugins.sqlalchemy_storage import codec
from stm_plugins.sqlalchemy_storage.compiled import Compiled, StatementCache
from stm_plugins.sqlalchemy_storage.migrations import MIGRATIONS, MigrationStep, check_steps

if TYPE_CHECKING:
    from sqlalchemy.sql.expression import ClauseElement

    from stm_plugins.sqlalchemy_storage import statements as st
else:
    # Statement builders need SQLAlchemy, which only runs when a statement is not
    # precompiled: every use below sits in a lambda the cache calls on a miss.
    st = lazy_module("stm_plugins.sqlalchemy_storage.statements")


#: Set (to anything) to check every precompiled statement against its builder on
#: first use; the test suite sets it.
VERIFY_PRECOMPILED_ENV = "STM_VERIFY_PRECOMPILED_SQL"


class Want(enum.Enum):
    """What a step fetches."""

    ONE = "one"  # the first row or None
    ALL = "all"  # every row
    COUNT = "count"  # the number of rows changed
    NOTHING = "nothing"
    MANY = "many"  # executemany over a list of parameter dicts; nothing fetched


class Step(NamedTuple):
    sql: Compiled
    params: Any
    want: Want


#: Turns the results of a write's steps into the records it returns.
Finish = Callable[[list[Any]], list[MemoryRecord]]


def capture_upsert(dialect: str, rows: int | None) -> Any:
    return st.capture_upsert(dialect, rows)


def write_upsert(dialect: str, rows: int | None) -> Any:
    return st.write_upsert(dialect, rows)


#: Characters of JSON the sent-messages memo holds: a host's active rows
#: (six lines of a few hundred characters are about 2,000), a thousand of them
#: before it starts over. At a quarter of this, 450 rows that a busy host keeps
#: writing in turn made it start over every few hundred writes, and a tool
#: write then decoded its rows' lines again.
SENT_MAX_CHARS = 4 * MAX_CHARS


class SentMessages:
    """The messages each row was last written with here, by key: the JSON text
    and the lines it encodes. A later write that returns the same text (a
    summary write keeps a row's lines) takes the lines instead of decoding the
    JSON again; any other text is decoded as usual, so an entry that is out of
    date costs nothing but the comparison. Bounded by entries and by the
    characters of the JSON it holds (a line can be long): it starts over
    when full."""

    def __init__(self, limit: int = 1024, max_chars: int = SENT_MAX_CHARS) -> None:
        self._by_key: TextMemo[MemoryKey, tuple[str, tuple[CrudeMessage, ...]]] = TextMemo(
            max_entries=limit, max_chars=max_chars)

    def remember(self, key: MemoryKey, sent: tuple[str, tuple[CrudeMessage, ...]]) -> None:
        by_key = self._by_key
        if by_key.full():
            by_key.clear()
        by_key.remember(key, sent, len(sent[0]))

    def get(self, key: MemoryKey) -> tuple[str, tuple[CrudeMessage, ...]] | None:
        return self._by_key.get(key)


class CapturedRows:
    """How a capture's returned rows become records (possibly in another
    thread, after the caller's list could have changed). One object rather
    than a closure: a write in flight keeps it alive, and with many in flight
    each object counts towards the garbage collector's next pass."""

    __slots__ = ("_sent", "_sent_by_key", "_writes")

    def __init__(self, writes: tuple[CaptureWrite, ...],
                 sent: list[tuple[str, tuple[CrudeMessage, ...]]],
                 sent_by_key: SentMessages) -> None:
        self._writes = writes
        self._sent = sent
        self._sent_by_key = sent_by_key

    def __call__(self, rows: list[Any]) -> list[MemoryRecord]:
        # The JSON just sent comes back as is: its messages are not decoded again.
        writes, sent, remember = self._writes, self._sent, self._sent_by_key.remember
        for w, s in zip(writes, sent, strict=True):
            remember(w.key, s)
        return [codec.memory_from_row(r, key=w.key, sent_messages=s)
                for r, w, s in zip(rows, writes, sent, strict=True)]


class SqlStorageAdapter(abc.ABC):
    """Storage on a SQL database; subclasses supply ``setup``, ``aclose`` and
    the two ways of running steps."""

    name: str
    dialect_name: str

    def __init__(self, *, settings: Settings,
                 precompiled: Mapping[Hashable, Compiled] | None = None,
                 migrations: Sequence[MigrationStep] = MIGRATIONS) -> None:
        check_steps(migrations)
        self.settings = settings
        self.migrations = tuple(migrations)
        self._sql = StatementCache(self.dialect_name, precompiled,
                                   verify=bool(os.environ.get(VERIFY_PRECOMPILED_ENV)))
        self._closed = False
        #: Each row's messages as last written here: JSON text -> decoded lines.
        self._sent = SentMessages()
        #: The janitor's current purge window: (cutoff, end, spread, batches).
        self._purge_window: tuple[int, int, int, int] = (0, 0, 20, 0)
        #: How long the last purge batch held the database (``TimedPurge``).
        self.last_purge_seconds: float | None = None

    # -- what a backend provides -------------------------------------------------
    @abc.abstractmethod
    async def setup(self) -> SchemaStatus: ...

    @abc.abstractmethod
    async def aclose(self) -> None: ...

    @abc.abstractmethod
    async def _run_read(self, steps: Sequence[Step]) -> list[Any]:
        """Run read steps (several ones see one snapshot)."""

    @abc.abstractmethod
    async def _run_write(self, steps: Sequence[Step]) -> list[Any]:
        """Run steps in one transaction, committed before returning."""

    async def _read(self, steps: Sequence[Step]) -> list[Any]:
        tracer = telemetry.tracer()
        if tracer is None:
            return await self._run_read(steps)
        with tracer.start_as_current_span("stm.storage.read",
                                          attributes=self._span_attributes(steps)):
            return await self._run_read(steps)

    async def _write(self, steps: Sequence[Step]) -> list[Any]:
        tracer = telemetry.tracer()
        if tracer is None:
            return await self._run_write(steps)
        with tracer.start_as_current_span("stm.storage.write",
                                          attributes=self._span_attributes(steps)):
            return await self._run_write(steps)

    def _span_attributes(self, steps: Sequence[Step],
                         operation: str | None = None) -> dict[str, str | int]:
        if operation is None:
            # The adapter method that asked (the first caller not named _...):
            # looked up only while tracing.
            frame = sys._getframe(2)
            while frame.f_back is not None and frame.f_code.co_name.startswith("_"):
                frame = frame.f_back
            operation = frame.f_code.co_name
        return {"db.system.name": self.dialect_name, "stm.storage.backend": self.name,
                "stm.storage.operation": operation, "stm.storage.statements": len(steps)}

    async def _upsert_rows(self, kind: str, build: Callable[[str, int | None], Any],
                           params: Sequence[Mapping[str, Any]]) -> list[Any]:
        """One upsert per row, all in one transaction; rows in input order."""
        compiled = self._upsert_statement(kind, build)
        return await self._write([Step(compiled, p, Want.ONE) for p in params])

    def _upsert_statement(self, kind: str, build: Callable[[str, int | None], Any]) -> Compiled:
        """The upsert of one memory row."""
        return self.statement((kind,), lambda: self._announce(
            build(self.dialect_name, None), "k"))

    def _announce(self, statement: Any, what: str) -> Any:
        """A write statement as run. A backend shared by several processes
        makes it also announce what it changed (``what``: ``"k"`` memory keys,
        ``"s"`` servers, ``"u"`` users, from the rows it returns)."""
        return statement

    # -- helpers -------------------------------------------------------------------
    def statement(self, key: Hashable, build: Callable[[], ClauseElement]) -> Compiled:
        return self._sql.get(key, build)

    def _ensure_open(self) -> None:
        if self._closed:
            raise StorageError(f"the {self.name} storage adapter is closed")

    # -- reads -----------------------------------------------------------------------
    async def load_server_settings(self, server_id: str) -> ServerSettings:
        ident = {"server_id": server_id}
        row, cats = await self._read([
            Step(self.statement("settings_row", lambda: st.settings_row()), ident, Want.ONE),
            Step(self.statement("categories_rows", lambda: st.categories_rows()), ident, Want.ALL),
        ])
        return codec.settings_from_rows(server_id, row, cats)

    async def load_server_memories(self, server_id: str, *,
                                   updated_since_ms: int) -> list[MemoryRecord]:
        (rows,) = await self._read([Step(self.statement("server_rows", lambda: st.server_rows()),
                                         {"server_id": server_id, "since": updated_since_ms},
                                         Want.ALL)])
        return [codec.memory_from_row(r) for r in rows]

    async def newest_server_memories(self, reads: Sequence[NewestRows]
                                     ) -> list[list[MemoryRecord]]:
        if not reads:
            return []
        results = await self._read([Step(self._newest_statement(r), _newest_params(r), Want.ALL)
                                    for r in reads])
        return [[codec.memory_from_row(row) for row in rows] for rows in results]

    def _newest_statement(self, read: NewestRows) -> Compiled:
        shape = (read.lineage is not None, bool(read.hidden_channels),
                 read.crude_since_ms is not None)
        return self.statement(("newest_server_rows", *shape),
                              lambda: st.newest_server_rows(self.dialect_name, *shape))

    async def load_user_prefs(self, user_id: str) -> UserPrefs:
        (row,) = await self._read([Step(self.statement("prefs_row", lambda: st.prefs_row()),
                                        {"user_id": user_id}, Want.ONE)])
        return codec.prefs_from_row(user_id, row)

    async def load_user_memories(self, user_id: str, *,
                                 updated_since_ms: int) -> list[MemoryRecord]:
        (rows,) = await self._read([Step(self.statement("user_rows", lambda: st.user_rows()),
                                         {"user_id": user_id, "since": updated_since_ms},
                                         Want.ALL)])
        return [codec.memory_from_row(r) for r in rows]

    async def get_memory(self, key: MemoryKey) -> MemoryRecord | None:
        (row,) = await self._read([Step(self.statement("get_row", lambda: st.get_row()),
                                        codec.key_params(key), Want.ONE)])
        return None if row is None else codec.memory_from_row(row, key=key)

    async def list_memories(self, flt: MemoryFilter) -> list[MemoryRecord]:
        require_filter(flt)
        fields, params = _filter_params(flt)
        compiled = self.statement(("list_rows", fields),
                                  lambda: st.list_rows(self.dialect_name, fields))
        (rows,) = await self._read([Step(compiled, params, Want.ALL)])
        return [codec.memory_from_row(r) for r in rows]

    async def count_memories(self) -> int:
        (row,) = await self._read([Step(self.statement("count_rows", lambda: st.count_rows()), {},
                                        Want.ONE)])
        return int(row[0])

    # -- per-turn writes ---------------------------------------------------------------
    async def capture(self, writes: Sequence[CaptureWrite]) -> list[MemoryRecord]:
        if not writes:
            return []
        params, finish = self._capture_params(writes)
        return finish(await self._upsert_rows("capture", capture_upsert, params))

    def _capture_params(self, writes: Sequence[CaptureWrite]
                        ) -> tuple[list[dict[str, Any]], Finish]:
        """The upserts' parameters, and how their rows become records (possibly
        in another thread, after the caller's list could have changed)."""
        writes = tuple(writes)
        params = []
        sent = []
        last_messages: object = None
        last_sent: tuple[str, tuple[CrudeMessage, ...]] = ("", ())
        for w in writes:
            # A turn captures the same messages for several keys: encode them
            # once, and remember them for every key as one object.
            if w.messages is not last_messages:
                clean = codec.clean_messages(w.messages)
                last_messages, last_sent = w.messages, (codec.encode_messages(clean), clean)
            params.append(codec.capture_params(w, last_sent[0]))
            sent.append(last_sent)

        return params, CapturedRows(writes, sent, self._sent)

    async def write_memory(self, writes: Sequence[MemoryWrite]) -> list[MemoryRecord]:
        if not writes:
            return []
        if any(w.revision is not None for w in writes):
            steps, finish = self._write_memory_steps(writes)
            return finish(await self._write(steps))
        params = [codec.write_params(w) for w in writes]
        rows = await self._upsert_rows("write", write_upsert, params)
        known = self._sent.get
        return [codec.memory_from_row(r, key=w.key, sent_messages=known(w.key))
                for r, w in zip(rows, writes, strict=True)]

    def _write_memory_steps(self, writes: Sequence[MemoryWrite]) -> tuple[list[Step], Finish]:
        """Each upsert, followed by its revision and the trim when it has one, all
        in one transaction; and how the results become records."""
        writes = tuple(writes)
        upsert = self._upsert_statement("write", write_upsert)
        steps: list[Step] = []
        for w in writes:
            steps.append(Step(upsert, codec.write_params(w), Want.ONE))
            if w.revision is not None:
                insert = self.statement("revision_insert", lambda: st.revision_insert())
                trim = self.statement("revision_trim", lambda: st.revision_trim())
                note = codec.revision_params(w.key, w.revision, w.now_ms)
                steps.append(Step(insert, note, Want.NOTHING))
                steps.append(Step(trim, note, Want.NOTHING))

        known = self._sent.get

        def finish(results: list[Any]) -> list[MemoryRecord]:
            rows = [r for r, s in zip(results, steps, strict=True) if s.sql is upsert]
            # A summary or category write leaves the row's lines as they were:
            # when they are the ones last written here, they are not decoded again.
            return [codec.memory_from_row(r, key=w.key, sent_messages=known(w.key))
                    for r, w in zip(rows, writes, strict=True)]
        return steps, finish

    async def list_revisions(self, key: MemoryKey) -> list[MemoryRevision]:
        compiled = self.statement("revision_rows", lambda: st.revision_rows())
        (rows,) = await self._read([Step(compiled, codec.key_params(key), Want.ALL)])
        return [codec.revision_from_row(key, r) for r in rows]

    # -- admin writes -----------------------------------------------------------------
    def _settings_upsert(self, columns: tuple[str, ...]) -> Compiled:
        return self.statement(("settings_upsert", columns), lambda: self._announce(
            st.settings_upsert(self.dialect_name, columns), "s"))

    async def update_server_settings(self, server_id: str, changes: Mapping[str, object],
                                     *, now_ms: int) -> ServerSettings:
        check_setting_names(changes)
        values = codec.setting_params(changes)
        columns = tuple(f for f in SERVER_SETTING_FIELDS if f in values)
        ident = {"server_id": server_id}
        row, cats = await self._write([
            Step(self._settings_upsert(columns), {**values, **ident, "now": now_ms}, Want.ONE),
            Step(self.statement("categories_rows", lambda: st.categories_rows()), ident, Want.ALL),
        ])
        return codec.settings_from_rows(server_id, row, cats)

    async def replace_categories(self, server_id: str, categories: Sequence[CategoryRecord],
                                 *, now_ms: int,
                                 clear_server_memories: bool) -> tuple[ServerSettings,
                                                                       list[MemoryKey]]:
        _check_positions(categories)
        ident = {"server_id": server_id}
        steps = [
            Step(self._settings_upsert(()), {**ident, "now": now_ms}, Want.ONE),
            Step(self.statement("categories_delete", lambda: st.categories_delete()), ident,
                 Want.NOTHING),
        ]
        if categories:
            steps.append(Step(self.statement("categories_insert", lambda: st.categories_insert()),
                              [codec.category_params(server_id, c) for c in categories],
                              Want.MANY))
        steps.append(Step(self.statement("categories_rows", lambda: st.categories_rows()), ident,
                          Want.ALL))
        if clear_server_memories:
            steps.append(Step(self.statement("delete_server_rows", lambda: self._announce(
                st.delete_server_rows(), "k")), ident, Want.ALL))
        results = await self._write(steps)
        settings = codec.settings_from_rows(server_id, results[0], results[-2]
                                            if clear_server_memories else results[-1])
        removed = [codec.key_from_row(r) for r in results[-1]] if clear_server_memories else []
        return settings, removed

    async def change_private_channels(self, server_id: str, *,
                                      add: Collection[str] = frozenset(),
                                      remove: Collection[str] = frozenset(),
                                      now_ms: int) -> ServerSettings:
        added, removed = channel_id_set("add", add), channel_id_set("remove", remove)
        compiled = self.statement("private_channels_upsert", lambda: self._announce(
            st.private_channels_upsert(self.dialect_name), "s"))
        ident = {"server_id": server_id}
        row, cats = await self._write([
            Step(compiled, {**ident, "now": now_ms,
                            "private_channel_ids": codec.encode_ids(added - removed),
                            "add": codec.encode_ids(added),
                            "remove": codec.encode_ids(removed)}, Want.ONE),
            Step(self.statement("categories_rows", lambda: st.categories_rows()), ident, Want.ALL),
        ])
        return codec.settings_from_rows(server_id, row, cats)

    async def replace_server_config(self, server_id: str, changes: Mapping[str, object],
                                    categories: Sequence[CategoryRecord], *,
                                    now_ms: int) -> tuple[ServerSettings, list[MemoryKey]]:
        check_setting_names(changes)
        _check_positions(categories)
        values = codec.setting_params(changes)
        columns = tuple(f for f in SERVER_SETTING_FIELDS if f in values)
        ident = {"server_id": server_id}
        rows = [codec.category_params(server_id, c) for c in categories]
        wanted = {f"cat_{name}_{i}": row[name] for i, row in enumerate(rows)
                  for name in ("position", "label", "description")}
        count = len(rows)
        # The settings upsert comes first: it locks the server's row, which every
        # category writer locks first too, so the comparison below sees the
        # categories as they are when this transaction commits.
        steps = [
            Step(self._settings_upsert(columns), {**values, **ident, "now": now_ms}, Want.ONE),
            Step(self.statement(("delete_server_rows_unless", count), lambda: self._announce(
                st.delete_server_rows_unless_categories(count), "k")), {**ident, **wanted},
                Want.ALL),
            Step(self.statement("categories_delete", lambda: st.categories_delete()), ident,
                 Want.NOTHING),
        ]
        if rows:
            steps.append(Step(self.statement("categories_insert", lambda: st.categories_insert()),
                              rows, Want.MANY))
        steps.append(Step(self.statement("categories_rows", lambda: st.categories_rows()), ident,
                          Want.ALL))
        results = await self._write(steps)
        settings = codec.settings_from_rows(server_id, results[0], results[-1])
        return settings, [codec.key_from_row(r) for r in results[1]]

    async def set_user_prefs(self, user_id: str, *, crossserver_opt_in: bool,
                             now_ms: int) -> UserPrefs:
        compiled = self.statement("prefs_upsert", lambda: self._announce(
            st.prefs_upsert(self.dialect_name), "u"))
        (row,) = await self._write([Step(compiled, {
            "user_id": user_id, "crossserver_opt_in": bool(crossserver_opt_in), "now": now_ms,
        }, Want.ONE)])
        return codec.prefs_from_row(user_id, row)

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        require_filter(flt)
        fields, params = _filter_params(flt)
        compiled = self.statement(("delete_rows", fields),
                                  lambda: self._announce(st.delete_rows(fields), "k"))
        (rows,) = await self._write([Step(compiled, params, Want.ALL)])
        return [codec.key_from_row(r) for r in rows]

    async def purge_older_than(self, cutoff_ms: int, *, batch_size: int) -> int:
        """Delete at most ``batch_size`` rows older than ``cutoff_ms``, the lowest
        ids of a window of the oldest rows first (see ``statements.purge``).

        A window is opened by a batch that leaves rows in it; it is kept here
        as ``(cutoff_ms, end, spread, batches)``, and the next batches take
        the rest of its rows, those older than ``end``, until one finds fewer
        than it may delete. ``spread`` is the window's width in batches: from
        20 (scattered old rows share pages within it) it halves, down to 2,
        while windows last a single batch (old rows in table order: the
        oldest rows already are neighbours, and sorting a wide window would
        be wasted), and doubles back while they last longer. Returns 0 only
        when no row older than ``cutoff_ms`` is left, except those another
        process's janitor holds at that moment on PostgreSQL (it deletes them).
        """
        if batch_size < 1:
            raise ValidationError(f"batch_size must be at least 1, got {batch_size}",
                                  field="batch_size")
        _, window_end, spread, batches = (
            self._purge_window if self._purge_window[0] == cutoff_ms else (cutoff_ms, 0, 20, 0))
        statement = self.statement("purge", lambda: st.purge())
        held = 0.0
        while True:
            # Past 2000 rows, sorting the window costs more than the pages it saves.
            window = max(batch_size, min(spread * batch_size, 2000))
            rows, seconds, yielded = await self._timed_purge(
                Step(statement, {"cutoff": cutoff_ms, "bound": window_end or cutoff_ms,
                                 "window": window, "batch": batch_size}, Want.ALL))
            held += seconds
            # A batch that gave way to a waiting write left rows of its window.
            full = yielded or len(rows) == batch_size
            if not window_end:  # a new window
                if full:  # with rows left in it
                    newest = max(int(r[0]) for r in rows)
                    window_end, batches = min(cutoff_ms, newest + 1), 1
                break
            if full:  # more of the open window
                batches += 1
                break
            # The window ran out: the next batch opens another, one as wide as
            # this one was worth. An empty end of a window is no answer yet.
            spread = max(2, spread // 2) if batches == 1 else min(20, spread * 2)
            window_end = batches = 0
            if rows:
                break
        self._purge_window = (cutoff_ms, window_end, spread, batches)
        self.last_purge_seconds = held
        return len(rows)

    async def _timed_purge(self, step: Step) -> tuple[list[Any], float, bool]:
        """The purge step's rows, how long it held the database (here the
        call's wall time; a backend whose writes queue says less) and whether
        it stopped early for other writes (never here: a backend with one
        writer may)."""
        started = time.perf_counter()
        (rows,) = await self._write([step])
        return rows, time.perf_counter() - started, False

    # -- privacy requests and inventory (optional capabilities) -----------------------
    async def rows_with_author(self, author_id: str) -> list[MemoryRecord]:
        compiled = self.statement("rows_with_author",
                                  lambda: st.rows_with_author(self.dialect_name))
        (rows,) = await self._read([Step(compiled, {"pattern": codec.author_pattern(author_id)},
                                         Want.ALL)])
        records = [codec.memory_from_row(r) for r in rows]
        return [r for r in records if any(m.author_id == author_id for m in r.messages)]

    async def replace_messages(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                               expected_rev: int) -> MemoryRecord | None:
        return await self._rewrite(key, messages, expected_rev, clear=False)

    async def _rewrite(self, key: MemoryKey, messages: Sequence[CrudeMessage],
                       expected_rev: int, *, clear: bool) -> MemoryRecord | None:
        """New lines for a row not written since ``expected_rev`` (one
        transaction); with ``clear`` its summary, categories and revisions go too."""
        clean = codec.clean_messages(tuple(messages))
        text = codec.encode_messages(clean)
        ident = {**codec.key_params(key), "rev": expected_rev}
        if clear:
            update = self.statement("clear_content", lambda: self._announce(
                st.clear_content(), "k"))
            history = self.statement("revisions_delete_after_clear",
                                     st.revisions_delete_after_clear)
            row, _ = await self._write([Step(update, {**ident, "messages": text}, Want.ONE),
                                        Step(history, ident, Want.NOTHING)])
        else:
            update = self.statement("replace_messages", lambda: self._announce(
                st.replace_messages(), "k"))
            (row,) = await self._write([Step(update, {**ident, "messages": text}, Want.ONE)])
        return None if row is None else codec.memory_from_row(row, key=key,
                                                              sent_messages=(text, clean))

    async def rows_mentioning(self, terms: Sequence[str]) -> list[MemoryRecord]:
        patterns = codec.mention_patterns(terms)
        if not patterns:
            return []
        compiled = self.statement(("rows_mentioning", len(patterns)),
                                  lambda: st.rows_mentioning(self.dialect_name, len(patterns)))
        (rows,) = await self._read([Step(compiled, {f"pattern{i}": p
                                                    for i, p in enumerate(patterns)},
                                         Want.ALL)])
        return [codec.memory_from_row(r) for r in rows]

    async def clear_content(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                            expected_rev: int) -> MemoryRecord | None:
        return await self._rewrite(key, messages, expected_rev, clear=True)

    async def delete_user_prefs(self, user_id: str) -> bool:
        compiled = self.statement("prefs_delete", lambda: self._announce(
            st.prefs_delete(), "u"))
        (rows,) = await self._write([Step(compiled, {"user_id": user_id}, Want.ALL)])
        return bool(rows)

    async def server_ids(self) -> list[str]:
        (rows,) = await self._read([Step(self.statement("server_ids", st.server_ids), {},
                                         Want.ALL)])
        return sorted(str(r[0]) for r in rows)

    async def count_older_than(self, cutoff_ms: int) -> int:
        (row,) = await self._read([Step(self.statement("count_older", st.count_older),
                                        {"cutoff": cutoff_ms}, Want.ONE)])
        return int(row[0])


def _filter_params(flt: MemoryFilter) -> tuple[tuple[str, ...], dict[str, object]]:
    return codec.filter_params({f: getattr(flt, f) for f in codec.FILTER_FIELDS
                                if getattr(flt, f) is not None})


def _newest_params(read: NewestRows) -> dict[str, Any]:
    params: dict[str, Any] = {"server_id": read.server_id, "since": read.updated_since_ms,
                              "limit": read.limit}
    if read.lineage is not None:
        params["persona_lineage_id"] = read.lineage
    if read.hidden_channels:
        params["hidden"] = codec.encode_ids(read.hidden_channels)
    if read.crude_since_ms is not None:
        params["crude_since"] = read.crude_since_ms
    return params


def _check_positions(categories: Sequence[CategoryRecord]) -> None:
    positions = [c.position for c in categories]
    if any(p < 0 for p in positions) or len(set(positions)) != len(positions):
        raise ValidationError(
            f"category positions must be distinct and 0 or more, got {positions}",
            field="categories")
