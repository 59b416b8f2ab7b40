"""Every statement the adapter runs, built with SQLAlchemy Core.

Builders take the dialect name (``"sqlite"`` or ``"postgresql"``) because
upserts come from the dialect modules. Parameters are named after the column
they fill; multi-row statements suffix them with ``__<row>``
(:data:`.compiled.ROW_SEPARATOR`). Constants are literal SQL, not bound
parameters, so binding stays a plain dict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.expression import BindParameter, ClauseElement, ColumnElement

from stm_plugins.sqlalchemy_storage.codec import SCOPE_LITERALS
from stm_plugins.sqlalchemy_storage.compiled import ROW_SEPARATOR
from stm_plugins.sqlalchemy_storage.schema import (
    KEY_COLUMNS,
    MEMORY_COLUMNS,
    REVISION_COLUMNS,
    SETTINGS_COLUMNS,
    categories,
    memories,
    memory_revisions,
    server_settings,
    user_prefs,
)

_EMPTY_OBJECT = sa.literal_column("'{}'", sa.Text)
_EMPTY_ARRAY = sa.literal_column("'[]'", sa.Text)
_ZERO = sa.literal_column("0", sa.Integer)
_ONE = sa.literal_column("1", sa.Integer)
_EMPTY_TEXT = sa.literal_column("''", sa.Text)

_TYPES: dict[str, Any] = {
    "now": sa.BigInteger(), "crude_ttl": sa.BigInteger(), "summary_ttl": sa.BigInteger(),
    "cutoff": sa.BigInteger(), "since": sa.BigInteger(), "batch": sa.Integer(),
    "bound": sa.BigInteger(), "window": sa.Integer(),
    "inc": sa.Integer(), "reset": sa.Integer(), "set_summary": sa.Integer(),
    "set_categories": sa.Integer(), "clear_messages": sa.Integer(), "rev": sa.BigInteger(),
    "restored_from": sa.BigInteger(), "keep": sa.Integer(), "crude_since": sa.BigInteger(),
}


def _insert(dialect: str) -> Callable[[sa.Table], Any]:
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


class _Binds:
    """Named bind parameters, suffixed with a row number in multi-row statements."""

    def __init__(self, row: int | None = None) -> None:
        self.suffix = "" if row is None else f"{ROW_SEPARATOR}{row}"

    def __call__(self, name: str, column: sa.Column[Any] | None = None) -> BindParameter[Any]:
        type_ = column.type if column is not None else _TYPES.get(name, sa.Text())
        return sa.bindparam(name + self.suffix, type_=type_)

    def key(self) -> dict[str, Any]:
        return {c.name: self(c.name, c) for c in KEY_COLUMNS}


def _expired(b: _Binds) -> ColumnElement[bool]:
    """The stored row was expired at ``now`` (see ``stm_core.pipeline.memory_ttl.is_expired``)."""
    m = memories.c
    ttl = sa.case((sa.func.coalesce(m.summary, _EMPTY_TEXT) != _EMPTY_TEXT, b("summary_ttl")),
                  else_=b("crude_ttl"))
    return (b("now") - m.updated_at_ms) > ttl


def capture_upsert(dialect: str, row: int | None = None) -> Any:
    """Crude capture: replace messages, add to the counter, clear expired content."""
    b = _Binds(row)
    m = memories.c
    stmt = _insert(dialect)(memories).values(
        **b.key(),
        parent_channel_id=b("parent_channel_id", m.parent_channel_id),
        persona_lineage_id=b("persona_lineage_id", m.persona_lineage_id),
        messages=b("messages", m.messages),
        turns_since_refresh=b("inc"),
        updated_at_ms=b("now"), created_at_ms=b("now"), rev=_ONE,
    )
    new = stmt.excluded
    expired = _expired(b)
    return stmt.on_conflict_do_update(
        index_elements=list(KEY_COLUMNS),
        set_={
            "messages": new.messages,
            "updated_at_ms": new.updated_at_ms,
            "parent_channel_id": sa.func.coalesce(new.parent_channel_id, m.parent_channel_id),
            "persona_lineage_id": sa.func.coalesce(new.persona_lineage_id,
                                                   m.persona_lineage_id),
            "turns_since_refresh": m.turns_since_refresh + new.turns_since_refresh,
            "summary": sa.case((expired, sa.null()), else_=m.summary),
            "categories": sa.case((expired, _EMPTY_OBJECT), else_=m.categories),
            "rev": m.rev + _ONE,
        },
    ).returning(*MEMORY_COLUMNS)


def write_upsert(dialect: str, row: int | None = None) -> Any:
    """Summary/category write: flagged parts change, an expired row starts empty."""
    b = _Binds(row)
    m = memories.c
    stmt = _insert(dialect)(memories).values(
        **b.key(),
        parent_channel_id=b("parent_channel_id", m.parent_channel_id),
        persona_lineage_id=b("persona_lineage_id", m.persona_lineage_id),
        summary=b("summary", m.summary),
        categories=b("categories", m.categories),
        messages=_EMPTY_ARRAY,
        turns_since_refresh=_ZERO,
        last_refreshed_turn=b("reset"),
        updated_at_ms=b("now"), created_at_ms=b("now"), rev=_ONE,
    )
    new = stmt.excluded
    expired = _expired(b)
    return stmt.on_conflict_do_update(
        index_elements=list(KEY_COLUMNS),
        set_={
            "summary": sa.case((b("set_summary") == _ONE, new.summary),
                               (expired, sa.null()), else_=m.summary),
            "categories": sa.case((b("set_categories") == _ONE, new.categories),
                                  (expired, _EMPTY_OBJECT), else_=m.categories),
            "messages": sa.case((sa.or_(b("clear_messages") == _ONE, expired), _EMPTY_ARRAY),
                                else_=m.messages),
            "turns_since_refresh": sa.case((b("reset") == _ONE, _ZERO),
                                           else_=m.turns_since_refresh),
            "last_refreshed_turn": m.last_refreshed_turn + b("reset"),
            "parent_channel_id": sa.func.coalesce(new.parent_channel_id, m.parent_channel_id),
            "persona_lineage_id": sa.func.coalesce(new.persona_lineage_id,
                                                   m.persona_lineage_id),
            "updated_at_ms": new.updated_at_ms,
            "rev": m.rev + _ONE,
        },
    ).returning(*MEMORY_COLUMNS)


def multi_row(build: Callable[[str, int | None], Any], rows: int) -> ClauseElement:
    """PostgreSQL: several upserts as one statement (data-modifying CTEs), so a
    turn's writes cost one round trip and commit together. Each returned row
    ends with its input position (``ord``)."""
    ctes = [build("postgresql", i).cte(f"w{i}") for i in range(rows)]
    selects = [sa.select(*cte.c, sa.literal_column(str(i), sa.Integer).label("ord"))
               for i, cte in enumerate(ctes)]
    return sa.union_all(*selects)


# -- memory reads and deletes -------------------------------------------------------
def _scope_rows(scope: str, owner: sa.Column[Any]) -> ClauseElement:
    b = _Binds()
    m = memories.c
    return sa.select(*MEMORY_COLUMNS).where(
        m.scope_kind == sa.literal_column(f"'{scope}'", sa.Text),
        owner == b(owner.name, owner), m.updated_at_ms >= b("since"))


def server_rows() -> ClauseElement:
    return _scope_rows("server", memories.c.server_id)


def user_rows() -> ClauseElement:
    return _scope_rows("user", memories.c.user_id)


def _listed_ids(dialect: str, ids: BindParameter[Any]) -> Any:
    """The ids of a JSON array parameter, as a subquery."""
    if dialect == "postgresql":
        return sa.select(sa.func.jsonb_array_elements_text(sa.cast(ids, JSONB)))
    return sa.select(sa.func.json_each(ids).table_valued("value").c.value)


def newest_server_rows(dialect: str, lineage: bool, hidden: bool,
                       crude_since: bool) -> ClauseElement:
    """A server's newest rows in the cached views' order (time, then the key
    in byte order), at most ``limit`` (``NewestRows``; which filters apply is
    part of the statement). The server's cold-load index yields them in time
    order; rows of one time are sorted among themselves."""
    b = _Binds()
    m = memories.c
    where = [m.scope_kind == sa.literal_column("'server'", sa.Text),
             m.server_id == b("server_id", m.server_id), m.updated_at_ms >= b("since")]
    if lineage:
        where.append(m.persona_lineage_id == b("persona_lineage_id", m.persona_lineage_id))
    if hidden:
        listed = _listed_ids(dialect, b("hidden"))
        where += [m.channel_id.not_in(listed),
                  sa.or_(m.parent_channel_id.is_(None), m.parent_channel_id.not_in(listed))]
    if crude_since:
        where.append(sa.or_(sa.and_(m.summary.is_not(None), m.summary != _EMPTY_TEXT),
                            m.updated_at_ms >= b("crude_since")))
    order = [m.updated_at_ms.desc(), *(c.desc() for c in _key_order(dialect)[2:])]
    return (sa.select(*MEMORY_COLUMNS).where(*where).order_by(*order)
            .limit(sa.bindparam("limit", type_=sa.Integer())))


def get_row() -> ClauseElement:
    b = _Binds()
    return sa.select(*MEMORY_COLUMNS).where(*(c == b(c.name, c) for c in KEY_COLUMNS))


#: Below every stored time (one above BIGINT's least value, which PostgreSQL
#: would read as a NUMERIC and then use no index of the column).
_ALWAYS = sa.literal_column("-9223372036854775807", sa.BigInteger)


def _filter(fields: Sequence[str]) -> list[ColumnElement[bool]]:
    """Each field equal to its parameter; ``scope_kind=server`` and
    ``scope_kind=user`` (``codec.SCOPE_LITERALS``) written out, so the index of
    that scope's rows can serve the statement.

    A user's rows (forget a user) are found through the user-scope index. On
    SQLite without statistics the planner would rather take the unique key's
    index for its first column, ``scope_kind``, and read every user-scope row
    in it: a range on the index's second column, true of every row, makes
    the user-scope index the closer match."""
    b = _Binds()
    m = memories.c
    where = [m.scope_kind == sa.literal_column(f"'{f.partition('=')[2]}'", sa.Text)
             if f in SCOPE_LITERALS else m[f] == b(f, m[f]) for f in fields]
    if "scope_kind=user" in fields and "user_id" in fields:
        where.append(m.updated_at_ms >= _ALWAYS)
    return where


def _key_order(dialect: str) -> list[ColumnElement[Any]]:
    # Byte order on both backends, like Python's str ordering.
    return [c.collate("C") if dialect == "postgresql" else c for c in KEY_COLUMNS]


def list_rows(dialect: str, fields: Sequence[str]) -> ClauseElement:
    return sa.select(*MEMORY_COLUMNS).where(*_filter(fields)).order_by(*_key_order(dialect))


def rows_with_author(dialect: str) -> ClauseElement:
    """Rows whose stored lines may hold one by an author (``pattern`` from
    ``codec.author_pattern``; the caller checks the decoded lines)."""
    b = _Binds()
    return (sa.select(*MEMORY_COLUMNS)
            .where(memories.c.messages.like(b("pattern"), escape="\\"))
            .order_by(*_key_order(dialect)))


def replace_messages() -> ClauseElement:
    """New lines for one row, only if nobody wrote it since it was read (``rev``)."""
    b = _Binds()
    m = memories.c
    return (sa.update(memories)
            .where(*(c == b(c.name, c) for c in KEY_COLUMNS), m.rev == b("rev"))
            .values(messages=b("messages", m.messages), rev=m.rev + _ONE)
            .returning(*MEMORY_COLUMNS))


def rows_mentioning(dialect: str, count: int) -> ClauseElement:
    """Rows whose summary, categories or lines, or a kept revision's summary,
    categories or actor, match one of ``count`` patterns (``pattern0``...; from
    ``codec.mention_patterns``), ignoring case (``ILIKE``; on SQLite
    ``lower()`` of both sides, which folds ASCII letters only)."""
    b = _Binds()
    m = memories.c
    r = memory_revisions.c
    patterns = [b(f"pattern{i}") for i in range(count)]

    def matches(*columns: sa.Column[Any]) -> ColumnElement[bool]:
        return sa.or_(*(c.ilike(p, escape="\\") for c in columns for p in patterns))

    in_revisions = sa.exists().where(r.memory_id == m.id,
                                     matches(r.summary, r.categories, r.actor))
    return (sa.select(*MEMORY_COLUMNS)
            .where(sa.or_(matches(m.summary, m.categories, m.messages), in_revisions))
            .order_by(*_key_order(dialect)))


def clear_content() -> ClauseElement:
    """New lines for one row, its summary and categories cleared, only if
    nobody wrote it since it was read (``rev``)."""
    b = _Binds()
    m = memories.c
    return (sa.update(memories)
            .where(*(c == b(c.name, c) for c in KEY_COLUMNS), m.rev == b("rev"))
            .values(messages=b("messages", m.messages), summary=sa.null(),
                    categories=_EMPTY_OBJECT, rev=m.rev + _ONE)
            .returning(*MEMORY_COLUMNS))


def revisions_delete_after_clear() -> ClauseElement:
    """Every kept revision of the row :func:`clear_content` just cleared (its
    ``rev`` is now ``rev + 1``; in the same transaction, after it, holding
    the row's lock). Should the update not have applied and another writer
    left the row at that ``rev``, its revisions go all the same: the row is
    being cleared, and the caller reads it and tries again."""
    b = _Binds()
    m = memories.c
    r = memory_revisions.c
    cleared = (sa.select(m.id).where(*(c == b(c.name, c) for c in KEY_COLUMNS),
                                     m.rev == b("rev") + _ONE).scalar_subquery())
    return sa.delete(memory_revisions).where(r.memory_id == cleared)


def delete_rows(fields: Sequence[str]) -> ClauseElement:
    return sa.delete(memories).where(*_filter(fields)).returning(*KEY_COLUMNS)


def delete_server_rows() -> ClauseElement:
    b = _Binds()
    m = memories.c
    return sa.delete(memories).where(
        m.scope_kind == sa.literal_column("'server'", sa.Text),
        m.server_id == b("server_id", m.server_id)).returning(*KEY_COLUMNS)


def purge() -> ClauseElement:
    """At most ``batch`` rows older than ``cutoff``: the lowest ids among the
    ``window`` oldest rows older than ``bound``; returns the ``updated_at_ms``
    of each row it deleted.

    Rows next to each other in time order can be far apart in the table (old
    rows scattered through it): deleting the oldest ``batch`` touches a table
    page, and a page of each key index, per row. The lowest ids of a wider
    window of old rows share pages. ``bound`` (at most ``cutoff``) keeps later
    batches on the same window; it is a range of the updated_at index, so a
    batch reads at most ``window`` entries of it. On PostgreSQL rows another
    transaction holds (another process's janitor) are left to it.
    """
    b = _Binds()
    oldest = memories.alias("oldest")
    # PostgreSQL: the window's rows are locked as they are chosen, skipping any
    # another transaction holds. Janitors of several processes then never wait
    # for one another: without it two of them locked overlapping rows in
    # different orders and one died of a deadlock. SQLite has one writer and
    # renders no locking clause.
    window = (sa.select(oldest.c.id).where(oldest.c.updated_at_ms < b("bound"))
              .order_by(oldest.c.updated_at_ms).limit(b("window"))
              .with_for_update(skip_locked=True).subquery("candidates"))
    lowest = sa.select(window.c.id).order_by(window.c.id).limit(b("batch"))
    m = memories.c
    # The cutoff again on the row deleted: a writer that touched the row while
    # this waited for its lock made it fresh, and PostgreSQL re-checks these
    # conditions (not the subquery) on the row's new version.
    return (sa.delete(memories).where(m.id.in_(lowest), m.updated_at_ms < b("cutoff"))
            .returning(m.updated_at_ms))


def count_rows() -> ClauseElement:
    return sa.select(sa.func.count()).select_from(memories)


# -- revisions (schema version 2) ------------------------------------------------------
def _row_id() -> Any:
    """The memory row of the bound key, as a scalar subquery."""
    b = _Binds()
    return (sa.select(memories.c.id).where(*(c == b(c.name, c) for c in KEY_COLUMNS))
            .scalar_subquery())


def revision_insert() -> ClauseElement:
    """The row's content right after a write, as a revision (same transaction)."""
    b = _Binds()
    m = memories.c
    r = memory_revisions.c
    source = sa.select(m.id, m.rev, m.summary, m.categories, b("author", r.author),
                       b("actor", r.actor), b("restored_from"), b("now")).where(
        *(c == b(c.name, c) for c in KEY_COLUMNS))
    return sa.insert(memory_revisions).from_select(
        ["memory_id", "rev", "summary", "categories", "author", "actor", "restored_from",
         "written_at_ms"], source)


def revision_trim() -> ClauseElement:
    """Delete all but the newest ``keep`` revisions of the row. Run after the
    row's upsert, which holds the row's lock, so concurrent writers of the row
    trim one after the other and the limit holds."""
    b = _Binds()
    r = memory_revisions.c
    row_id = _row_id()
    newest = (sa.select(r.rev).where(r.memory_id == row_id).order_by(r.rev.desc())
              .limit(b("keep")))
    return sa.delete(memory_revisions).where(r.memory_id == row_id, r.rev.not_in(newest))


def revision_rows() -> ClauseElement:
    r = memory_revisions.c
    return (sa.select(*REVISION_COLUMNS).where(r.memory_id == _row_id())
            .order_by(r.rev.desc()))


def count_older() -> ClauseElement:
    b = _Binds()
    return (sa.select(sa.func.count()).select_from(memories)
            .where(memories.c.updated_at_ms < b("cutoff")))


def server_ids() -> ClauseElement:
    """Servers with settings or server-scope rows (DM rows have no server)."""
    m = memories.c
    with_rows = sa.select(m.server_id).where(
        m.scope_kind == sa.literal_column("'server'", sa.Text))
    return sa.union(sa.select(server_settings.c.server_id), with_rows)


# -- server settings and categories ---------------------------------------------------
def settings_row() -> ClauseElement:
    b = _Binds()
    s = server_settings.c
    return sa.select(*SETTINGS_COLUMNS).where(s.server_id == b("server_id", s.server_id))


def settings_upsert(dialect: str, columns: Sequence[str]) -> ClauseElement:
    """Write only ``columns`` (plus the timestamps); the others keep their value."""
    b = _Binds()
    s = server_settings.c
    stmt = _insert(dialect)(server_settings).values(
        server_id=b("server_id", s.server_id),
        **{c: b(c, s[c]) for c in columns},
        updated_at_ms=b("now"), created_at_ms=b("now"),
    )
    new = stmt.excluded
    changes = {c: new[c] for c in columns}
    changes["updated_at_ms"] = new.updated_at_ms
    return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=[s.server_id], set_=changes).returning(*SETTINGS_COLUMNS)


#: The stored private-channel list (a JSON array of ids) with ``add`` joined and
#: ``remove`` taken out, computed from the row's current value at the database.
_PRIVATE_CHANNELS_SQL = {
    "sqlite": ("(SELECT coalesce(json_group_array(value), '[]') FROM ("
               "SELECT value FROM json_each(stm_server_settings.private_channel_ids) "
               "UNION SELECT value FROM json_each(:add) "
               "EXCEPT SELECT value FROM json_each(:remove) ORDER BY value))"),
    "postgresql": ("(SELECT coalesce(json_agg(v ORDER BY v), '[]'::json)::text FROM ("
                   "SELECT json_array_elements_text("
                   "stm_server_settings.private_channel_ids::json) AS v "
                   "UNION SELECT json_array_elements_text(CAST(:add AS json)) "
                   "EXCEPT SELECT json_array_elements_text(CAST(:remove AS json))) AS ids)"),
}


def private_channels_upsert(dialect: str) -> ClauseElement:
    """Add and remove private channel ids in one statement: the new list is
    computed from the row as the database holds it (the row is locked on
    PostgreSQL, the whole database on SQLite), so concurrent edits never lose
    each other's ids. A new row gets ``private_channel_ids`` as given."""
    b = _Binds()
    s = server_settings.c
    stmt = _insert(dialect)(server_settings).values(
        server_id=b("server_id", s.server_id),
        private_channel_ids=b("private_channel_ids", s.private_channel_ids),
        updated_at_ms=b("now"), created_at_ms=b("now"))
    merged = sa.text(_PRIVATE_CHANNELS_SQL[dialect]).bindparams(
        sa.bindparam("add", type_=sa.Text()), sa.bindparam("remove", type_=sa.Text()))
    return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=[s.server_id],
        set_={"private_channel_ids": merged, "updated_at_ms": stmt.excluded.updated_at_ms},
    ).returning(*SETTINGS_COLUMNS)


def delete_server_rows_unless_categories(count: int) -> ClauseElement:
    """Delete the server's server-scope rows unless its stored categories are
    exactly the ``count`` given ones (``cat_position_i``, ``cat_label_i``,
    ``cat_description_i``): an import clears memories only when the categories
    really change, decided inside its own transaction."""
    b = _Binds()
    m = memories.c
    c = categories.c
    server = c.server_id == b("server_id", c.server_id)
    stored = sa.select(sa.func.count()).where(server).scalar_subquery()
    same: Any = sa.literal_column("0", sa.Integer)
    if count:
        match = sa.or_(*(sa.and_(c.position == b(f"cat_position_{i}", c.position),
                                 c.label == b(f"cat_label_{i}", c.label),
                                 c.description == b(f"cat_description_{i}", c.description))
                         for i in range(count)))
        same = sa.select(sa.func.count()).where(server, match).scalar_subquery()
    wanted = sa.literal_column(str(int(count)), sa.Integer)
    return sa.delete(memories).where(
        m.scope_kind == sa.literal_column("'server'", sa.Text),
        m.server_id == b("server_id", m.server_id),
        sa.or_(stored != wanted, same != wanted)).returning(*KEY_COLUMNS)


def categories_rows() -> ClauseElement:
    b = _Binds()
    c = categories.c
    return (sa.select(c.position, c.label, c.description)
            .where(c.server_id == b("server_id", c.server_id)).order_by(c.position))


def categories_delete() -> ClauseElement:
    b = _Binds()
    return sa.delete(categories).where(categories.c.server_id == b("server_id",
                                                                   categories.c.server_id))


def categories_insert() -> ClauseElement:
    b = _Binds()
    return sa.insert(categories).values(**{c.name: b(c.name, c) for c in categories.c})


# -- user preferences -----------------------------------------------------------------
def prefs_row() -> ClauseElement:
    b = _Binds()
    p = user_prefs.c
    return sa.select(p.user_id, p.crossserver_opt_in).where(p.user_id == b("user_id", p.user_id))


def prefs_upsert(dialect: str) -> ClauseElement:
    b = _Binds()
    p = user_prefs.c
    stmt = _insert(dialect)(user_prefs).values(
        user_id=b("user_id", p.user_id),
        crossserver_opt_in=b("crossserver_opt_in", p.crossserver_opt_in),
        updated_at_ms=b("now"))
    new = stmt.excluded
    return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=[p.user_id],
        set_={"crossserver_opt_in": new.crossserver_opt_in,
              "updated_at_ms": new.updated_at_ms},
    ).returning(p.user_id, p.crossserver_opt_in)


def prefs_delete() -> ClauseElement:
    b = _Binds()
    p = user_prefs.c
    return sa.delete(user_prefs).where(p.user_id == b("user_id", p.user_id)).returning(p.user_id)
