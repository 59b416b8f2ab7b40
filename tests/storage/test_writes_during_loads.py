"""A row committed while its view loads reaches the view: the load read the
database before the write, so the write is replayed onto what it read, for
a server's view and a user's alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stm_core.errors import StorageError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.records import CaptureWrite, MemoryKey
from tests.conftest import OpenStm

DM = Turn(user_id="u", channel_id="dm-u", persona_id="p")
GUILD = Turn(user_id="u", channel_id="c1", server_id="g", persona_id="p")


async def _record_teal_sky(stm: Any, turn: Turn) -> None:
    """A turn that stores one user line, "teal sky", in ``turn``'s channel."""
    await stm.record_turn(turn, [HistoryMessage(author_type="user", content="teal sky",
                                                speaker_name="Ann", author_id="u")],
                          [PersonaResponse(content="ok", persona_name="Bot", persona_id="p")])


@pytest.mark.parametrize(("turn", "method"), [(GUILD, "newest_server_memories"),
                                              (DM, "load_user_memories")],
                         ids=["server view", "user view"])
async def test_a_row_written_while_its_view_loads_is_in_the_view(
        open_stm: OpenStm, db_url: str, turn: Turn, method: str) -> None:
    async with open_stm(db_url) as stm:
        engine = stm.engine
        inner = getattr(stm.adapter, method)
        read, release = asyncio.Event(), asyncio.Event()

        async def slow(*args: Any, **kwargs: Any) -> Any:
            rows = await inner(*args, **kwargs)  # read before the write commits
            read.set()
            await release.wait()
            return rows

        setattr(stm.adapter, method, slow)
        load = (engine.server_memories("g") if turn.server_id is not None
                else engine.user_view("u"))
        loading = asyncio.ensure_future(load)
        await read.wait()
        await _record_teal_sky(stm, turn)
        release.set()
        loaded = await loading
        view = loaded if turn.server_id is not None else loaded.memories  # type: ignore[union-attr]
        setattr(stm.adapter, method, inner)
        key = next(iter(k for k in view.records if k.channel_id == turn.channel_id), None)
        assert key is not None, "the row written during the load is missing from the view"
        assert view.records[key].messages[0].content == "teal sky"
        # The view the engine keeps is that one: a warm read finds the row.
        again = (await engine.server_memories("g") if turn.server_id is not None
                 else (await engine.user_view("u")).memories)
        assert key in again.records


async def _slow_user_load(stm: Any, read: asyncio.Event, release: asyncio.Event) -> Any:
    """Make the next user view load wait after its reads; returns the real method."""
    inner = stm.adapter.load_user_memories

    async def slow(*args: Any, **kwargs: Any) -> Any:
        rows = await inner(*args, **kwargs)
        read.set()
        await release.wait()
        return rows

    stm.adapter.load_user_memories = slow
    return inner


async def test_a_user_view_whose_preferences_changed_while_it_loaded_is_not_kept(
        open_stm: OpenStm, sqlite_url: str) -> None:
    """The load read the preferences before the change: that view is handed
    to its caller but not kept, and the next read shows the new preferences."""
    async with open_stm(sqlite_url) as stm:
        read, release = asyncio.Event(), asyncio.Event()
        inner = await _slow_user_load(stm, read, release)
        loading = asyncio.ensure_future(stm.engine.user_view("u"))
        await read.wait()
        await stm.admin.set_user_opt_in("u", opt_in=True)
        release.set()
        assert not (await loading).prefs.crossserver_opt_in
        stm.adapter.load_user_memories = inner
        assert (await stm.engine.user_view("u")).prefs.crossserver_opt_in


async def test_a_user_view_loaded_while_its_rows_were_dropped_is_not_kept(
        open_stm: OpenStm, tmp_path: Any) -> None:
    """A write of the user's rows failed during the load (what it left is
    unknown, so the user's rows are dropped): the loaded view is not kept."""
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        read, release = asyncio.Event(), asyncio.Event()
        inner = await _slow_user_load(stm, read, release)
        loading = asyncio.ensure_future(stm.engine.user_view("u"))
        await read.wait()
        bad = CaptureWrite(key=MemoryKey.user("u", "dm-u", "p", None), messages=(),
                           now_ms=stm.clock.now_ms(),
                           parent_channel_id=object())  # type: ignore[arg-type]
        with pytest.raises(StorageError):
            await stm.engine.capture([bad])
        release.set()
        await loading
        stm.adapter.load_user_memories = inner
        assert stm.cache.users.peek("u") is None


@pytest.mark.parametrize(("turn", "method"), [(GUILD, "newest_server_memories"),
                                              (DM, "load_user_memories")],
                         ids=["server view", "user view"])
async def test_a_load_that_fails_while_a_row_is_written_raises_its_own_error(
        open_stm: OpenStm, sqlite_url: str, turn: Turn, method: str) -> None:
    """The caller gets the storage error of the read, not one of the
    bookkeeping of writes made meanwhile, and the next read loads the row."""
    async with open_stm(sqlite_url) as stm:
        inner = getattr(stm.adapter, method)
        read, release = asyncio.Event(), asyncio.Event()

        async def failing(*args: Any, **kwargs: Any) -> Any:
            await inner(*args, **kwargs)
            read.set()
            await release.wait()
            raise StorageError("the connection was lost")

        def load() -> Any:
            if turn.server_id is not None:
                return stm.engine.server_memories("g")
            return stm.engine.user_view("u")

        setattr(stm.adapter, method, failing)
        loading = asyncio.ensure_future(load())
        await read.wait()
        await _record_teal_sky(stm, turn)
        release.set()
        with pytest.raises(StorageError, match="connection was lost"):
            await loading
        setattr(stm.adapter, method, inner)
        loaded = await load()
        view = loaded if turn.server_id is not None else loaded.memories
        assert [r.messages[0].content for r in view.records.values()
                if r.key.channel_id == turn.channel_id] == ["teal sky"]
