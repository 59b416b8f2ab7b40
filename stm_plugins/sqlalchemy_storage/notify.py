"""PostgreSQL change notices: ``NOTIFY`` inside each write, ``LISTEN`` for others'.

A write statement is wrapped so that the same statement also calls
``pg_notify`` with what it changed, computed in SQL from the rows it returned::

    WITH stm_changed AS (<the upsert or delete ... RETURNING ...>),
         stm_note AS (SELECT pg_notify('<channel>', <payload>) FROM stm_changed
                      HAVING count(*) > 0)
    SELECT stm_changed.* FROM stm_changed LEFT OUTER JOIN stm_note ON true

The write keeps its single round trip; PostgreSQL delivers the notice at
COMMIT and drops it on rollback. The payload is compact JSON::

    {"o": "<writer instance id>", "k": [[scope, server, user, channel, persona], ...]}
    {"o": ..., "s": [server ids]}        settings or categories changed
    {"o": ..., "u": [user ids]}          preferences changed
    {"o": ..., "p": <cutoff ms>}         the janitor purged older rows
    {"o": ..., "x": 1}                   too much to name: drop everything
    {"o": ..., "c": "<token>"}           a listener's delivery self-check (ignored)

PostgreSQL refuses payloads of 8000 bytes or more, so a longer one is sent as
``"x"`` instead.

A listener hears its own store's writes too, one notice per write. Those are
recognised by their first bytes (PostgreSQL's rendering of the JSON object,
``{"o" : "<id>", ...``) and handed on as one shared origin-only notice,
without parsing: the store skips its own notices anyway. Anything else, own
notices in another rendering included, is parsed as usual. The notifying
backend's pid is no test: behind a transaction pooler a server connection
also carries other processes' writes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.sql.expression import ClauseElement

from stm_core.storage.records import ChangeNotice, MemoryKey

log = logging.getLogger("stm.storage.postgres")

#: What a wrapped statement announces: memory keys, servers or users.
Announce = Literal["k", "s", "u"]

#: Payloads at least this long are replaced by ``{"x": 1}`` (PostgreSQL's limit is 8000).
MAX_PAYLOAD_BYTES = 7900
_SAFE_LITERAL = re.compile(r"[A-Za-z0-9_]+")
#: Longest wait for the listening connection to close before it is terminated.
CLOSE_TIMEOUT_S = 2.0


def channel_for(schema: str | None) -> str:
    """One channel per store: stores in different schemas do not hear each other."""
    name = f"stm_changes_{schema}" if schema else "stm_changes"
    if len(name) > 63:  # PostgreSQL truncates identifiers longer than this
        name = "stm_changes_" + hashlib.sha1(name.encode()).hexdigest()[:20]
    return name


def _literal(text: str) -> sa.ColumnElement[str]:
    if not _SAFE_LITERAL.fullmatch(text):
        raise ValueError(f"{text!r} is not a plain name")
    return sa.literal_column(f"'{text}'", sa.Text)


def with_notice(statement: Any, *, channel: str, origin: str, what: Announce) -> ClauseElement:
    """``statement`` (rows returned as before) plus a NOTIFY of what it changed."""
    changed = statement.cte("stm_changed")
    c = changed.c
    item: Any
    if what == "k":
        item = sa.func.json_build_array(c.scope_kind, c.server_id, c.user_id, c.channel_id,
                                        c.persona_id)
    elif what == "s":
        item = c.server_id
    else:
        item = c.user_id
    payload = sa.cast(sa.func.json_build_object(
        sa.literal_column("'o'", sa.Text), _literal(origin),
        sa.literal_column(f"'{what}'", sa.Text), sa.func.json_agg(item)), sa.Text)
    everything = sa.literal_column(f"'{{\"o\":\"{origin}\",\"x\":1}}'", sa.Text)
    bounded = sa.case((sa.func.octet_length(payload) < MAX_PAYLOAD_BYTES, payload),
                      else_=everything)
    note = (sa.select(sa.func.pg_notify(_literal(channel), bounded).label("sent"))
            .select_from(changed).having(sa.func.count() > 0).cte("stm_note"))
    return sa.select(*c).select_from(changed.outerjoin(note, sa.true()))


def notice_payload(origin: str, **fields: object) -> str:
    return json.dumps({"o": origin, **fields}, separators=(",", ":"))


def decode_notice(payload: str) -> ChangeNotice | None:
    """The notice in a payload, or ``None`` (logged) when it is not one of ours."""
    try:
        data = json.loads(payload)
        origin = str(data["o"])
        if "c" in data:  # another store's delivery self-check: nothing changed
            return None
        if data.get("x"):
            return ChangeNotice(origin=origin, everything=True)
        keys = tuple(MemoryKey(scope_kind=k[0], server_id=k[1], user_id=k[2], channel_id=k[3],
                               persona_id=k[4]) for k in data.get("k") or ())
        cutoff = data.get("p")
        return ChangeNotice(origin=origin, keys=keys,
                            servers=tuple(str(s) for s in data.get("s") or ()),
                            users=tuple(str(u) for u in data.get("u") or ()),
                            purged_before_ms=None if cutoff is None else int(cutoff))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        log.warning("ignoring a malformed change notice (%s): %.200r", exc, payload)
        return None


class PgSubscription:
    """A dedicated connection (outside the pool) that LISTENs on the channel
    (``listening``), or, where a pooler answers for the server, only answers
    the listener's checks.

    It runs nothing else: a backend running a statement delivers no notice
    meanwhile, and a statement may wait on a lock or run long, so any call on
    it would hold other processes' notices and its own keep-alive check back
    past the staleness promise (docs/reliability.md)."""

    def __init__(self, conn: Any, heard_checks: dict[str, asyncio.Event], *,
                 listening: bool = True) -> None:
        self._conn = conn
        self._heard_checks = heard_checks
        #: Whether LISTEN was sent (not when a pooler answers for the server).
        self.listening = listening
        #: Whether a self-check notice came back (see :meth:`hears`); ``None``
        #: until checked.
        self.delivers_notices: bool | None = None

    async def hears(self, send: Callable[[str], Awaitable[None]], origin: str,
                    timeout_s: float) -> bool:
        """Whether a notice sent by ``send`` (on the statement connections)
        reaches this connection within ``timeout_s``. Behind a transaction
        pooler it does not: the LISTEN ran on a server connection that went
        back to the pool. A subscription that sent no LISTEN (a pooler was
        found first) answers ``False`` without a test notice."""
        if not self.listening:
            self.delivers_notices = False
            return False
        token = uuid.uuid4().hex
        heard = self._heard_checks[token] = asyncio.Event()
        try:
            await send(notice_payload(origin, c=token))
            await asyncio.wait_for(heard.wait(), timeout_s)
            self.delivers_notices = True
        except TimeoutError:
            self.delivers_notices = False
        finally:
            self._heard_checks.pop(token, None)
        return self.delivers_notices

    @property
    def backend_pid(self) -> int:
        return int(self._conn.get_server_pid())

    async def check(self, timeout_s: float) -> None:
        """Raises unless the connection answers ``SELECT 1`` within ``timeout_s``."""
        await asyncio.wait_for(self._conn.fetchval("SELECT 1"), timeout_s)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None or conn.is_closed():
            return
        try:
            await asyncio.wait_for(conn.close(), CLOSE_TIMEOUT_S)
        except Exception:
            conn.terminate()


def own_write_prefix(origin: str) -> str:
    """How every notice a write statement of ``origin`` sends begins (see
    :func:`with_notice`: PostgreSQL renders ``json_build_object`` this way)."""
    return f'{{"o" : "{origin}", '


async def subscribe(connect: Callable[[], Any], channel: str,
                    on_notice: Callable[[ChangeNotice], None],
                    on_lost: Callable[[], None], *, origin: str,
                    refuse_pooler: bool = False) -> PgSubscription:
    """Listen on ``channel``; notices of ``origin``'s (this store's) own write
    statements reach ``on_notice`` as one origin-only notice, unparsed.

    With ``refuse_pooler``, a connection that a pooler answers for
    (:func:`behind_pooler`) sends no LISTEN: the subscription keeps the
    connection for its checks and hears nothing (``hears`` answers ``False``
    without a test notice)."""
    conn = await connect()
    heard_checks: dict[str, asyncio.Event] = {}
    own_prefix = own_write_prefix(origin)
    own_notice = ChangeNotice(origin=origin)

    def listener(_conn: object, _pid: int, _channel: str, payload: str) -> None:
        if payload.startswith(own_prefix):
            on_notice(own_notice)
            return
        check = _self_check_token(payload)
        if check is not None:
            if check in heard_checks:
                heard_checks[check].set()
            return
        notice = decode_notice(payload)
        if notice is not None:
            on_notice(notice)

    try:
        listening = not (refuse_pooler and await behind_pooler(conn))
        if listening:
            await conn.add_listener(channel, listener)
    except BaseException:
        conn.terminate()
        raise
    if not listening:
        log.info("a connection pooler answers for PostgreSQL on the listening connection; "
                 "not sending LISTEN through it")
    conn.add_termination_listener(lambda _conn: on_lost())
    return PgSubscription(conn, heard_checks, listening=listening)


async def behind_pooler(conn: Any) -> bool:
    """Whether a pooler stands between ``conn`` and PostgreSQL: the backend
    that runs a query is not the one the connection was told it had (a pooler
    hands out keys of its own). Through a pooler in transaction mode a LISTEN
    would stay on a pooled server connection after the transaction, and every
    notice would reach whichever client that connection serves next (PgBouncer:
    "got packet 'A' from server when not linked"; writes queued behind such a
    connection were seen to wait out ``db_timeout_seconds``)."""
    running: int = await conn.fetchval("SELECT pg_backend_pid()")
    told: int = conn.get_server_pid()
    return running != told


def _self_check_token(payload: str) -> str | None:
    if '"c":' not in payload:  # cheap test first: notices are many, checks rare
        return None
    try:
        token = json.loads(payload).get("c")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) else None
