"""Hypothesis state machine: the cache never holds what the database does not.

Random programs of turns, tool calls, admin edits and clears, settings and
opt-in changes, context builds and clock moves run against a store on a real
SQLite file. Any write or read may be made to fail, either before it reaches
the database or after the database committed it (the caller then sees an
error although the change is stored: a connection lost during COMMIT).
After every step the cache is compared with the database
(:func:`.support.cache_problems`).

The failures are injected by a thin wrapper that forwards every call to the
real adapter and raises around it; nothing is simulated.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from stm_core._util.clock import ManualClock
from stm_core.errors import StorageError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.protocol import StorageAdapter
from stm_core.store import Stm, open_store

from .support import cache_problems, scaled

SERVERS = ("g1", "g2")
CHANNELS = ("c1", "c2", "c3")
PERSONAS = (None, "p1")
USERS = ("u1", "u2")
FAULTS = st.sampled_from(("none", "none", "before", "after"))
READ_METHODS = frozenset({"load_server_settings", "load_server_memories",
                          "newest_server_memories", "load_user_prefs",
                          "load_user_memories", "get_memory"})
WRITE_METHODS = frozenset({"capture", "write_memory", "update_server_settings",
                           "replace_categories", "set_user_prefs", "delete_memories"})
STATS = {"steps": 0, "faults": 0}


class FaultyAdapter:
    """Forwards to a real adapter; the next armed call fails before or after it."""

    def __init__(self, inner: StorageAdapter) -> None:
        self.inner = inner
        self.armed: str = "none"
        self.read_armed = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in WRITE_METHODS:
            return self._write(name, attr)
        if name in READ_METHODS:
            return self._read(attr)
        return attr

    def _write(self, name: str, call: Any) -> Any:
        async def run(*args: Any, **kwargs: Any) -> Any:
            mode, self.armed = self.armed, "none"
            if mode == "before":
                STATS["faults"] += 1
                raise StorageError(f"injected: {name} failed before the database")
            result = await call(*args, **kwargs)
            if mode == "after":
                STATS["faults"] += 1
                raise StorageError(f"injected: {name} committed, then the connection died")
            return result
        return run

    def _read(self, call: Any) -> Any:
        async def run(*args: Any, **kwargs: Any) -> Any:
            if self.read_armed:
                self.read_armed = False
                STATS["faults"] += 1
                raise StorageError("injected: a read failed")
            return await call(*args, **kwargs)
        return run


class CacheMatchesDatabase(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = tempfile.TemporaryDirectory()
        self.clock = ManualClock()
        self.opened = open_store(f"sqlite+aiosqlite:///{Path(self.folder.name) / 'stm.db'}",
                                 clock=self.clock, load_entrypoints=False)
        self.stm: Stm = self.loop.run_until_complete(self.opened.__aenter__())
        self.faulty = FaultyAdapter(self.stm.adapter)
        self.stm.adapter = self.faulty  # type: ignore[assignment]

    def teardown(self) -> None:
        self.stm.adapter = self.faulty.inner
        self.loop.run_until_complete(self.opened.__aexit__(None, None, None))
        self.loop.close()
        self.folder.cleanup()

    def run(self, coro: Any, fault: str = "none") -> Any:
        STATS["steps"] += 1
        self.faulty.armed = fault
        try:
            return self.loop.run_until_complete(coro)
        except StorageError:
            assert fault != "none", "a write failed without an injected fault"
            return None
        finally:
            self.faulty.armed = "none"

    @staticmethod
    def turn(server: str | None, channel: str, persona: str | None, user: str) -> Turn:
        return Turn(user_id=user, channel_id=channel if server else f"dm-{channel}",
                    server_id=server, persona_id=persona, has_tools=True,
                    parent_channel_id="c1" if channel == "c3" and server else None)

    # -- turns ---------------------------------------------------------------------
    @rule(server=st.sampled_from((*SERVERS, None)), channel=st.sampled_from(CHANNELS),
          persona=st.sampled_from(PERSONAS), user=st.sampled_from(USERS), fault=FAULTS,
          text=st.text(max_size=30))
    def record_turn(self, server: str | None, channel: str, persona: str | None, user: str,
                    fault: str, text: str) -> None:
        t = self.turn(server, channel, persona, user)
        self.run(self.stm.record_turn(
            t, [HistoryMessage(author_type="user", content=text or "hi", speaker_name=user)],
            [PersonaResponse(persona_id=persona, persona_name="P", content="ok")]), fault)

    @rule(server=st.sampled_from((*SERVERS, None)), channel=st.sampled_from(CHANNELS),
          persona=st.sampled_from(PERSONAS), user=st.sampled_from(USERS), fault=FAULTS,
          summary=st.text(min_size=1, max_size=30))
    def tool_call(self, server: str | None, channel: str, persona: str | None, user: str,
                  fault: str, summary: str) -> None:
        args: dict[str, str] = {"summary": summary, "goals": summary}
        result = self.run(self.stm.apply_tool_call(self.turn(server, channel, persona, user),
                                                   args), fault)
        assert result is not None  # the tool never raises

    @rule(server=st.sampled_from((*SERVERS, None)), channel=st.sampled_from(CHANNELS),
          persona=st.sampled_from(PERSONAS), user=st.sampled_from(USERS),
          has_tools=st.booleans(), read_fault=st.booleans())
    def build_context(self, server: str | None, channel: str, persona: str | None, user: str,
                      has_tools: bool, read_fault: bool) -> None:
        self.faulty.read_armed = read_fault
        t = Turn(user_id=user, channel_id=channel if server else f"dm-{channel}",
                 server_id=server, persona_id=persona, has_tools=has_tools)
        self.run(self.stm.build_context(t))  # never raises, even when a read fails
        self.faulty.read_armed = False

    # -- admin ----------------------------------------------------------------------
    @rule(server=st.sampled_from(SERVERS), channel=st.sampled_from(CHANNELS),
          persona=st.sampled_from(PERSONAS), fault=FAULTS, text=st.text(max_size=20))
    def edit_memory(self, server: str, channel: str, persona: str | None, fault: str,
                    text: str) -> None:
        async def edit() -> None:
            mode = (await self.stm.admin.categories(server)).mode
            self.faulty.armed = fault
            if mode == "category":
                await self.stm.admin.edit_memory(channel_id=channel, persona_id=persona,
                                                 server_id=server, user_id="u1",
                                                 categories={"goals": text})
            else:
                await self.stm.admin.edit_memory(channel_id=channel, persona_id=persona,
                                                 server_id=server, user_id="u1", summary=text)
        self.run(edit(), fault)

    @rule(channel=st.sampled_from(CHANNELS), fault=FAULTS)
    def clear_channel(self, channel: str, fault: str) -> None:
        self.run(self.stm.admin.clear_channel(channel), fault)

    @rule(user=st.sampled_from(USERS), fault=FAULTS)
    def clear_user(self, user: str, fault: str) -> None:
        self.run(self.stm.admin.clear_user(user), fault)

    @rule(server=st.sampled_from(SERVERS), private=st.sets(st.sampled_from(CHANNELS)),
          fault=FAULTS)
    def set_private(self, server: str, private: set[str], fault: str) -> None:
        self.run(self.stm.admin.set_private_channels(server, channel_ids=private), fault)

    @rule(server=st.sampled_from(SERVERS), categories=st.booleans(), fault=FAULTS)
    def set_categories(self, server: str, categories: bool, fault: str) -> None:
        lines = ["Goals: what they want", "Mood: how it feels"] if categories else []
        self.run(self.stm.admin.set_categories(server, lines), fault)

    @rule(user=st.sampled_from(USERS), opt_in=st.booleans(), fault=FAULTS)
    def set_opt_in(self, user: str, opt_in: bool, fault: str) -> None:
        self.run(self.stm.admin.set_user_opt_in(user, opt_in=opt_in), fault)

    @rule(minutes=st.integers(1, 900))
    def time_passes(self, minutes: int) -> None:
        self.clock.advance(minutes=minutes)

    @invariant()
    def cache_mirrors_database(self) -> None:
        self.faulty.read_armed = False
        self.faulty.armed = "none"
        problems = self.loop.run_until_complete(cache_problems(self.stm))
        assert problems == [], "\n".join(problems)


CacheMatchesDatabase.TestCase.settings = settings(
    max_examples=scaled(ci=60, full=600), stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


class TestCacheMatchesDatabase(CacheMatchesDatabase.TestCase):  # type: ignore[name-defined,misc]
    @classmethod
    def tearDownClass(cls) -> None:
        from .conftest import _FIGURES
        from .support import add_figure

        add_figure(_FIGURES, "state_machine_steps", STATS["steps"])
        add_figure(_FIGURES, "state_machine_faults_injected", STATS["faults"])
