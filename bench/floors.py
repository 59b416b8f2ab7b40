"""The floors stm is measured against.

* :class:`HandBuild`: a hand-written context build for one known server, with
  plain dicts and f-strings: the least work that yields the same texts.
* :class:`RawSqlite` / :class:`RawPostgres`: the same row writes as stm's
  (two upserts per guild turn, messages as JSON, counter in SQL, ``RETURNING``)
  on the bare driver, one transaction per turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import aiosqlite
import attrs

from bench import workload as w
from stm_core.models import HistoryMessage, PersonaResponse
from stm_plugins.default_macros import TOOL_NAMES
from stm_plugins.default_phrasing import CATEGORY_NUDGE

# -- hand-written build --------------------------------------------------------


@attrs.frozen(kw_only=True)
class FloorRow:
    channel_id: str
    lineage: str
    summary: str | None
    categories: dict[str, str]
    #: (speaker, content) of the stored messages, oldest first.
    messages: tuple[tuple[str, str], ...]
    updated_at_ms: int
    counter: int


@attrs.frozen(kw_only=True)
class FloorServer:
    render_mode: str
    crude_count: int
    cadence: int
    slug_labels: tuple[tuple[str, str], ...]
    #: The nudge with its macros and labels already expanded (stm memoizes it too).
    nudge_text: str
    rows: dict[str, FloorRow]
    private_channels: frozenset[str] = frozenset()


def floor_server(seeds: Sequence[w.ChannelSeed], *, now_ms: int, render_mode: str,
                 crude_count: int = 6, cadence: int = 5) -> FloorServer:
    slugs = ("goals", "party_status", "hp_mp", "location", "open_threads")
    nudge = CATEGORY_NUDGE.replace("{category_labels}", ", ".join(w.CATEGORY_LABELS))
    for name, tool in TOOL_NAMES.items():
        nudge = nudge.replace("{" + name + "}", f"`{tool}`")
    # The benchmark host declares no long-term-memory tool: no sentence names one.
    nudge = nudge.replace("{long_term_memory_sentence}", "")
    rows = {s.channel_id: FloorRow(
        channel_id=s.channel_id, lineage=w.LINEAGE_ID, summary=s.summary,
        categories=dict(s.categories),
        messages=tuple((m.speaker_name or "", m.content) for m in s.messages),
        updated_at_ms=now_ms - s.age_minutes * w.MINUTE_MS, counter=s.counter)
        for s in seeds}
    return FloorServer(render_mode=render_mode, crude_count=crude_count, cadence=cadence,
                       slug_labels=tuple(zip(slugs, w.CATEGORY_LABELS, strict=True)),
                       nudge_text=nudge, rows=rows)


# A literal first character lets the regex engine skip ahead: keep them apart.
_MENTION = re.compile(r"<(?:#(\d+)|@!?(\d+))>")
_IDENTITY = re.compile(r"\{(bot|user)\}")
FloorResult = tuple[tuple[str, ...], str | None, int, int]


def relative_time(age_ms: int) -> str:
    minutes = age_ms // 60_000
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return "1 minute ago" if minutes == 1 else f"{minutes} minutes ago"
    hours = minutes // 60
    if hours < 24:
        return "1 hour ago" if hours == 1 else f"{hours} hours ago"
    days = hours // 24
    if days < 7:
        return "1 day ago" if days == 1 else f"{days} days ago"
    return "over a week ago"


class HandBuild:
    """``build_context`` for guild turns, written out by hand for the bench data."""

    def __init__(self, servers: Mapping[str, FloorServer], *, bot: str, user: str,
                 channel_names: Mapping[str, str], user_names: Mapping[str, str],
                 lineage: str, now_ms: int, fresh_window_ms: int = 3_600_000,
                 fresh_depth: int = 2, nudge_depth: int = 2, content_depth: int = -1,
                 max_others: int = 3) -> None:
        self.servers = servers
        self.bot = bot
        self.user = user
        self.labels = {cid: f"the channel named `{name}`" for cid, name in channel_names.items()}
        self.user_names = dict(user_names)
        self.lineage = lineage
        self.now_ms = now_ms
        self.fresh_window_ms = fresh_window_ms
        self.fresh_depth = fresh_depth
        self.nudge_depth = nudge_depth
        self.content_depth = content_depth
        self.max_others = max_others

    def _mention(self, m: re.Match[str]) -> str:
        channel = m.group(1)
        if channel is not None:
            return self.labels.get(channel, m.group(0))
        return self.user_names.get(m.group(2), m.group(0))

    def _identity(self, m: re.Match[str]) -> str:
        return self.bot if m.group(1) == "bot" else self.user

    def convert(self, text: str) -> str:
        if "<" in text:
            text = _MENTION.sub(self._mention, text)
        if "{" in text:
            text = _IDENTITY.sub(self._identity, text)
        # The bench's extra mention plugin.
        return text.replace("@everyone", "everyone") if "@everyone" in text else text

    def build(self, server_id: str, channel_id: str) -> FloorResult:
        server = self.servers[server_id]
        bot, now = self.bot, self.now_ms
        # The rules a build must apply even when this data breaks none of them:
        # expiry (24 h with a summary, 12 h without) and private channels.
        summary_since, crude_since = now - SUMMARY_TTL_MS, now - CRUDE_TTL_MS
        private = server.private_channels
        others = [r for r in server.rows.values()
                  if r.channel_id != channel_id and r.lineage == self.lineage
                  and r.updated_at_ms >= (summary_since if r.summary else crude_since)
                  and r.channel_id not in private]
        others.sort(key=lambda r: r.updated_at_ms, reverse=True)
        others = others[:self.max_others]
        blocks: list[str] = []
        for row in others:
            chan = f"<#{row.channel_id}>"
            head = (f"[System: {bot} remembers a recent conversation in {chan} "
                    f"({relative_time(now - row.updated_at_ms)}):\n")
            lines = "".join(f'{speaker}: "{content}"\n'
                            for speaker, content in row.messages[-server.crude_count:])
            if row.categories:
                body: str | None = "\n".join(
                    f"{' '.join(p.capitalize() for p in slug.split('_'))}: {v.strip()}"
                    for slug, v in row.categories.items() if v.strip())
            else:
                body = row.summary
            if body:
                blocks.append(f"{head}{body}]\n\n")
                if server.render_mode == "crude_summary" and lines:
                    blocks.append(f"[System: {bot}'s recent raw messages from {chan}:\n"
                                  f"{lines}]\n\n")
            elif lines:
                blocks.append(f"{head}{lines}]\n\n")
        texts: list[str] = []
        if blocks:
            texts.append(self.convert("".join(blocks).strip()))
        newest = max((r.updated_at_ms for r in others), default=None)
        live = server.rows.get(channel_id)
        nudge: str | None = None
        if live is not None:
            values = live.categories
            body = "\n".join(f"{label}: {values[slug].strip()}"
                             for slug, label in server.slug_labels
                             if values.get(slug, "").strip())
            if body:
                texts.append(self.convert(
                    f"[System: {bot}'s short term memory for this ongoing conversation:\n"
                    f"{body}]"))
            newest = live.updated_at_ms if newest is None else max(newest, live.updated_at_ms)
            if live.counter >= server.cadence:
                nudge = self.convert(server.nudge_text)
        depth = self.content_depth
        if newest is not None and now - newest <= self.fresh_window_ms:
            depth = self.fresh_depth if depth < 0 else min(self.fresh_depth, depth)
        return tuple(texts), nudge, self.nudge_depth, depth


def bench_hand_build(servers: Mapping[str, FloorServer], *, channel_names: Mapping[str, str],
                     now_ms: int) -> HandBuild:
    """The hand-written build over ``servers`` with the bench's bot, user,
    user names and persona lineage (the ones ``bench.workload`` turns carry)."""
    return HandBuild(servers, bot=w.BOT, user=w.USER_NAME, channel_names=channel_names,
                     user_names={w.USER_ID: w.USER_NAME, w.FRIEND_ID: w.FRIEND_NAME},
                     lineage=w.LINEAGE_ID, now_ms=now_ms)


# -- raw writers -----------------------------------------------------------------

KEY_COLUMNS = "scope_kind, server_id, user_id, channel_id, persona_id"

#: The same indexes as stm's table (janitor scan, cold loads, channel deletes),
#: so both sides maintain the same structures on every write.
INDEXES = (
    "CREATE INDEX IF NOT EXISTS memories_updated ON memories (updated_at_ms)",
    "CREATE INDEX IF NOT EXISTS memories_server ON memories (server_id, updated_at_ms) "
    "WHERE scope_kind = 'server'",
    "CREATE INDEX IF NOT EXISTS memories_user ON memories (user_id, updated_at_ms) "
    "WHERE scope_kind = 'user'",
    "CREATE INDEX IF NOT EXISTS memories_channel ON memories (channel_id)",
)

SQLITE_DDL = (
    f"""CREATE TABLE IF NOT EXISTS memories (
        id INTEGER PRIMARY KEY,
        scope_kind TEXT NOT NULL, server_id TEXT NOT NULL, user_id TEXT NOT NULL,
        channel_id TEXT NOT NULL, persona_id TEXT NOT NULL,
        parent_channel_id TEXT, persona_lineage_id TEXT, summary TEXT,
        categories TEXT NOT NULL DEFAULT '{{}}', messages TEXT NOT NULL DEFAULT '[]',
        turns_since_refresh INTEGER NOT NULL DEFAULT 0,
        last_refreshed_turn INTEGER NOT NULL DEFAULT 0,
        updated_at_ms INTEGER NOT NULL, rev INTEGER NOT NULL DEFAULT 1,
        created_at_ms INTEGER NOT NULL DEFAULT 0,
        UNIQUE ({KEY_COLUMNS}))""",
    *INDEXES,
)

#: Crude capture: replace messages, counter + n in SQL, clear an expired row's
#: content in the same statement, return the committed row.
CAPTURE_SQL = f"""
INSERT INTO {{table}} AS memories ({KEY_COLUMNS}, persona_lineage_id, parent_channel_id,
                      messages, turns_since_refresh, updated_at_ms, rev, created_at_ms)
VALUES ({{p}}1, {{p}}2, {{p}}3, {{p}}4, {{p}}5, {{p}}6, {{p}}7, {{p}}8, {{p}}9, {{p}}10, 1,
        {{p}}10)
ON CONFLICT ({KEY_COLUMNS}) DO UPDATE SET
  messages = excluded.messages,
  summary = CASE WHEN {{p}}10 - memories.updated_at_ms >
                      CASE WHEN memories.summary IS NULL THEN {{p}}11 ELSE {{p}}12 END
                 THEN NULL ELSE memories.summary END,
  categories = CASE WHEN {{p}}10 - memories.updated_at_ms >
                         CASE WHEN memories.summary IS NULL THEN {{p}}11 ELSE {{p}}12 END
                    THEN '{{{{}}}}' ELSE memories.categories END,
  persona_lineage_id = coalesce(excluded.persona_lineage_id, memories.persona_lineage_id),
  parent_channel_id = coalesce(excluded.parent_channel_id, memories.parent_channel_id),
  turns_since_refresh = memories.turns_since_refresh + excluded.turns_since_refresh,
  updated_at_ms = excluded.updated_at_ms,
  rev = memories.rev + 1
RETURNING *"""

#: Tool write: set the summary, reset the counter, count the refresh.
SUMMARY_SQL = f"""
INSERT INTO {{table}} AS memories ({KEY_COLUMNS}, persona_lineage_id, summary,
                      updated_at_ms, last_refreshed_turn, rev, created_at_ms)
VALUES ({{p}}1, {{p}}2, {{p}}3, {{p}}4, {{p}}5, {{p}}6, {{p}}7, {{p}}8, 1, 1, {{p}}8)
ON CONFLICT ({KEY_COLUMNS}) DO UPDATE SET
  summary = excluded.summary,
  persona_lineage_id = coalesce(excluded.persona_lineage_id, memories.persona_lineage_id),
  turns_since_refresh = 0,
  last_refreshed_turn = memories.last_refreshed_turn + 1,
  updated_at_ms = excluded.updated_at_ms,
  rev = memories.rev + 1
RETURNING *"""

CRUDE_TTL_MS = 12 * 3_600_000
SUMMARY_TTL_MS = 24 * 3_600_000


def _sql(template: str, placeholder: str, table: str = "memories") -> str:
    return template.format(p=placeholder, table=table)


def guild_keys(server: str, channel: str, user: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The server-scope and user-scope keys one guild turn writes."""
    return (("server", server, "", channel, w.PERSONA_ID),
            ("user", server, user, channel, w.PERSONA_ID))


class RawSqlite:
    """aiosqlite, one connection, WAL + synchronous=NORMAL, one transaction per turn.

    SQLite understands ``?NNN`` numbered parameters, so it shares the SQL text
    of the PostgreSQL writer.
    """

    def __init__(self, path: str, *, table: str = "memories") -> None:
        """``table`` may name stm's own table (same columns) to write next to stm."""
        self.path = path
        self.capture_sql = _sql(CAPTURE_SQL, "?", table)
        self.summary_sql = _sql(SUMMARY_SQL, "?", table)
        self._db: aiosqlite.Connection | None = None

    async def open(self) -> RawSqlite:
        db = await aiosqlite.connect(self.path)
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute("PRAGMA busy_timeout=5000")
        for ddl in SQLITE_DDL:
            await db.execute(ddl)  # harmless next to stm's table
        await db.commit()
        self._db = db
        return self

    @property
    def db(self) -> aiosqlite.Connection:
        assert self._db is not None, "call open() first"
        return self._db

    async def record(self, server: str, channel: str, user: str,
                     hist: Sequence[HistoryMessage], resp: Sequence[PersonaResponse],
                     now_ms: int) -> list[Any]:
        """What ``record_turn`` does for a guild turn: two upserts, one commit."""
        payload = w.messages_payload(hist, resp, now_ms)
        rows: list[Any] = []
        for key, increment in zip(guild_keys(server, channel, user), (1, 0), strict=True):
            rows.extend(await self.db.execute_fetchall(
                self.capture_sql,
                (*key, w.LINEAGE_ID, None, payload, increment, now_ms,
                 CRUDE_TTL_MS, SUMMARY_TTL_MS)))
        await self.db.commit()
        return rows

    async def write_summary(self, server: str, channel: str, user: str, summary: str,
                            now_ms: int) -> list[Any]:
        """What a summary tool call does in a guild: both scopes, one commit."""
        rows: list[Any] = []
        for key in guild_keys(server, channel, user):
            rows.extend(await self.db.execute_fetchall(
                self.summary_sql, (*key, w.LINEAGE_ID, summary, now_ms)))
        await self.db.commit()
        return rows

    async def checkpoint(self) -> None:
        await self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None


POSTGRES_DDL = (
    f"""CREATE TABLE IF NOT EXISTS memories (
        id BIGSERIAL PRIMARY KEY,
        scope_kind TEXT NOT NULL, server_id TEXT NOT NULL, user_id TEXT NOT NULL,
        channel_id TEXT NOT NULL, persona_id TEXT NOT NULL,
        parent_channel_id TEXT, persona_lineage_id TEXT, summary TEXT,
        categories JSONB NOT NULL DEFAULT '{{}}', messages JSONB NOT NULL DEFAULT '[]',
        turns_since_refresh INTEGER NOT NULL DEFAULT 0,
        last_refreshed_turn INTEGER NOT NULL DEFAULT 0,
        updated_at_ms BIGINT NOT NULL, rev INTEGER NOT NULL DEFAULT 1,
        created_at_ms BIGINT NOT NULL DEFAULT 0,
        UNIQUE ({KEY_COLUMNS}))""",
    *INDEXES,
)
PG_CAPTURE = (_sql(CAPTURE_SQL, "$").replace("$8,", "$8::jsonb,")
              .replace("$10 - memories", "$10::bigint - memories")
              .replace("THEN $11 ELSE $12", "THEN $11::bigint ELSE $12::bigint")
              .replace("'{}' ELSE", "'{}'::jsonb ELSE"))
PG_SUMMARY = _sql(SUMMARY_SQL, "$")


class RawPostgres:
    """asyncpg, one connection, the same two statements in one transaction."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.dsn = dsn
        self.schema = schema
        self._conn: Any = None

    async def open(self) -> RawPostgres:
        import asyncpg

        conn = await asyncpg.connect(self.dsn)
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        await conn.execute(f'SET search_path TO "{self.schema}"')
        for ddl in POSTGRES_DDL:
            await conn.execute(ddl)
        self._conn = conn
        return self

    async def record(self, server: str, channel: str, user: str,
                     hist: Sequence[HistoryMessage], resp: Sequence[PersonaResponse],
                     now_ms: int) -> list[Any]:
        payload = w.messages_payload(hist, resp, now_ms)
        rows: list[Any] = []
        async with self._conn.transaction():
            for key, increment in zip(guild_keys(server, channel, user), (1, 0), strict=True):
                rows.append(await self._conn.fetchrow(
                    PG_CAPTURE, *key, w.LINEAGE_ID, None, payload, increment, now_ms,
                    CRUDE_TTL_MS, SUMMARY_TTL_MS))
        return rows

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            await self._conn.close()
            self._conn = None
