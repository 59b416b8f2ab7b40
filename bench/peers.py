"""What a host would pick instead of stm, driven with the same conversation shape.

* LangGraph's ``AsyncSqliteSaver``: per turn ``aput`` a checkpoint whose state
  is the last 10 messages (langchain message objects), then ``aget_tuple``.
* LangGraph's ``AsyncPostgresSaver``: the same, on PostgreSQL, against stm on
  the same server at the same ``synchronous_commit``.
* The OpenAI Agents SDK's ``SQLiteSession``: per turn ``add_items`` (the user
  message and the reply) then ``get_items(limit=10)``.

The SQLite peers run at stm's durability (WAL, ``synchronous=NORMAL``: no fsync per
commit) for the headline ratios, and at their out-of-the-box setting
(``synchronous=FULL``, SQLite's default) reported beside them.

A peer that cannot be imported is reported as unavailable with the reason,
never as a failure of the whole run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from bench import workload as w


class PeerUnavailable(Exception):
    """The peer's package is missing or broken; the message says why."""


class _LangGraphPeer:
    """LangGraph's checkpointer as a host would drive it: per turn ``aput`` a
    checkpoint holding the last 10 messages, then ``aget_tuple``."""

    name = ""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._stack = contextlib.AsyncExitStack()
        self._saver: Any = None
        self._configs: dict[int, dict[str, Any]] = {}
        self._pool: list[Any] = []

    async def _start(self, package: str, saver: Callable[[], Any]) -> None:
        """Build the message pool, then enter ``saver()`` (the saver's
        ``from_conn_string``, imported inside it) and set its tables up."""
        try:
            self._messages()
            opening = saver()
        except Exception as exc:  # ImportError, or a broken install
            raise PeerUnavailable(f"{package}: {exc!r}") from exc
        self._saver = await self._stack.enter_async_context(opening)
        await self._saver.setup()

    def _messages(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage

        self._pool = [HumanMessage(content=w.message_text(k), name=w.USER_NAME) if k % 2 == 0
                      else AIMessage(content=w.message_text(k), name=w.BOT)
                      for k in range(w.MESSAGES * 4)]

    def _state(self, i: int) -> list[Any]:
        start = (i * 2) % (len(self._pool) - w.MESSAGES)
        return self._pool[start:start + w.MESSAGES]

    async def turn(self, i: int) -> None:
        from langgraph.checkpoint.base import empty_checkpoint

        thread = i % self.threads
        config = self._configs.get(thread) or {
            "configurable": {"thread_id": f"t{thread}", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        version = f"{i + 1:032}"
        checkpoint["channel_values"] = {"messages": self._state(i)}
        checkpoint["channel_versions"] = {"messages": version}
        new_config = await self._saver.aput(config, checkpoint,
                                            {"source": "loop", "step": i, "parents": {}},
                                            {"messages": version})
        self._configs[thread] = new_config
        got = await self._saver.aget_tuple(new_config)
        assert got is not None

    async def close(self) -> None:
        await self._stack.aclose()


class LangGraphSaver(_LangGraphPeer):
    name = "langgraph_async_sqlite_saver"

    def __init__(self, path: str, threads: int = w.CHANNELS, *,
                 synchronous: str | None = "NORMAL") -> None:
        """``synchronous=None`` keeps the saver's own default."""
        super().__init__(threads)
        self.path = path
        self.synchronous = synchronous

    async def open(self) -> LangGraphSaver:
        def saver() -> Any:
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            return AsyncSqliteSaver.from_conn_string(self.path)

        await self._start("langgraph-checkpoint-sqlite", saver)
        if self.synchronous is not None:
            await self._saver.conn.execute(f"PRAGMA synchronous={self.synchronous}")
        return self

    async def checkpoint(self) -> None:
        await self._saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class LangGraphPostgresSaver(_LangGraphPeer):
    """LangGraph's ``AsyncPostgresSaver`` on its own connection (as
    ``from_conn_string`` opens it: autocommit, psycopg), in a schema of its own,
    with ``synchronous_commit`` set to the value stm's writes run with."""

    name = "langgraph_async_postgres_saver"

    def __init__(self, dsn: str, schema: str, threads: int = w.CHANNELS, *,
                 synchronous_commit: str) -> None:
        super().__init__(threads)
        self.dsn = dsn
        self.schema = schema
        self.synchronous_commit = synchronous_commit

    async def open(self) -> LangGraphPostgresSaver:
        def saver() -> Any:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.conninfo import make_conninfo

            return AsyncPostgresSaver.from_conn_string(make_conninfo(self.dsn, options=(
                f"-c search_path={self.schema} "
                f"-c synchronous_commit={self.synchronous_commit}")))

        await self._start("langgraph-checkpoint-postgres", saver)
        return self

    async def setting(self, name: str) -> str:
        """A setting of the saver's session, as the server reports it."""
        async with self._saver.conn.cursor() as cur:
            await cur.execute(f"SHOW {name}")
            row = await cur.fetchone()
        assert row is not None
        return str(next(iter(row.values())) if isinstance(row, dict) else row[0])


class OpenAISession:
    name = "openai_agents_sqlite_session"

    def __init__(self, path: str, threads: int = w.CHANNELS, *,
                 synchronous: str | None = "NORMAL") -> None:
        """``synchronous=None`` keeps the SDK's own default."""
        self.path = path
        self.threads = threads
        self.synchronous = synchronous
        self._sessions: list[Any] = []
        self._pairs: list[list[dict[str, Any]]] = []

    async def open(self) -> OpenAISession:
        try:
            from agents import SQLiteSession
        except Exception as exc:
            raise PeerUnavailable(f"openai-agents: {exc!r}") from exc
        session_class: Any = SQLiteSession
        if self.synchronous is not None:
            synchronous = self.synchronous

            class TunedSession(SQLiteSession):  # type: ignore[misc]
                """The SDK's session; every connection it opens gets our pragma."""

                @staticmethod
                def _configure_connection(conn: Any) -> None:
                    SQLiteSession._configure_connection(conn)
                    conn.execute(f"PRAGMA synchronous={synchronous}")

            session_class = TunedSession
        self._sessions = [session_class(f"t{k}", self.path) for k in range(self.threads)]
        self._pairs = [[{"role": "user", "content": w.message_text(k)},
                        {"role": "assistant", "content": w.message_text(k + 1)}]
                       for k in range(w.MESSAGES)]
        return self

    async def turn(self, i: int) -> None:
        session = self._sessions[i % self.threads]
        await session.add_items(self._pairs[i % len(self._pairs)])
        items: Sequence[Any] = await session.get_items(limit=w.MESSAGES)
        assert items

    async def checkpoint(self) -> None:
        import sqlite3

        with contextlib.closing(sqlite3.connect(self.path)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def close(self) -> None:
        for session in self._sessions:
            session.close()
