"""``forget_user`` while other processes keep writing the same rows, and when
the database fails right after committing part of it.

The adapter is the real memory adapter; other processes' writes are real
captures and deletes made at the moments forget is most exposed to them (just
before it looks for the user's lines, just before a row's rewrite commits).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest

from stm_core._util.clock import ManualClock
from stm_core.admin.user_data import MAX_ATTEMPTS_PER_ROW
from stm_core.errors import StorageError
from stm_core.models import CrudeMessage
from stm_core.plugins import create_plugin_manager
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey, MemoryRecord
from stm_core.store import Stm
from stm_core.testing.conformance import authored
from stm_plugins.memory_storage import MemoryAdapter

X, Y = "4242", "5151"
G = "900"
C1, C2, C3 = (MemoryKey.server(G, c, "p") for c in ("c1", "c2", "c3"))
OWN = MemoryKey.user(X, "dm-x", "p", None)


class BusyHost(MemoryAdapter):
    """The memory adapter with other writers acting at chosen moments, and a
    connection that can drop right after a commit (once)."""

    def __init__(self) -> None:
        super().__init__()
        self.before_scan: Callable[[], Awaitable[None]] | None = None
        self.before_replace: Callable[[MemoryKey], Awaitable[None]] | None = None
        self.fail_after: str | None = None

    async def rows_with_author(self, author_id: str) -> list[MemoryRecord]:
        if self.before_scan is not None:
            await self.before_scan()
        return await super().rows_with_author(author_id)

    async def replace_messages(self, key: MemoryKey, messages: Sequence[CrudeMessage], *,
                               expected_rev: int) -> MemoryRecord | None:
        if self.before_replace is not None:
            await self.before_replace(key)
        done = await super().replace_messages(key, messages, expected_rev=expected_rev)
        self._lost("replace_messages")
        return done

    async def delete_memories(self, flt: MemoryFilter) -> list[MemoryKey]:
        removed = await super().delete_memories(flt)
        self._lost("delete_memories")
        return removed

    def _lost(self, name: str) -> None:
        if self.fail_after == name:
            self.fail_after = None
            raise StorageError(f"{name} committed, then the connection was lost")

    async def host_writes(self, key: MemoryKey, *lines: tuple[str | None, str]) -> None:
        """Another process records a turn: the row's window becomes ``lines``."""
        await self.capture([CaptureWrite(key=key, now_ms=1, messages=authored(*lines))])


@pytest.fixture
async def stm(clock: ManualClock) -> AsyncIterator[Stm]:
    store = Stm(BusyHost(), pm=create_plugin_manager(load_entrypoints=False),
                settings=Settings(), clock=clock)
    await store.setup()
    yield store
    await store.aclose()


def host_of(stm: Stm) -> BusyHost:
    assert isinstance(stm.adapter, BusyHost)
    return stm.adapter


async def seed(stm: Stm, *keys: MemoryKey) -> None:
    await stm.engine.capture([CaptureWrite(key=k, now_ms=stm.clock.now_ms(),
                                    messages=authored((Y, f"y-{k.channel_id}"),
                                                      (X, f"x-{k.channel_id}")))
                       for k in keys])


async def test_forget_gives_up_with_advice_while_the_host_keeps_writing_the_users_lines(
        stm: Stm) -> None:
    host = host_of(stm)
    await seed(stm, C1)

    async def x_speaks_again() -> None:
        await host.host_writes(C1, (Y, "y-c1"), (X, "x-again"))

    host.before_scan = x_speaks_again
    with pytest.raises(StorageError) as info:
        await stm.admin.forget_user(X)
    assert str(info.value) == (
        f"user {X}'s lines are still being written (the host's history windows still "
        "hold them); run forget again once they are gone from the host")


async def test_a_row_that_never_stops_changing_is_named_and_left_for_another_run(
        stm: Stm) -> None:
    host = host_of(stm)
    await seed(stm, C1)

    async def another_turn(key: MemoryKey) -> None:
        await host.host_writes(key, (Y, "y-c1"), (X, "x-c1"))

    host.before_replace = another_turn
    with pytest.raises(StorageError) as info:
        await stm.admin.forget_user(X)
    assert str(info.value) == (
        f"could not remove user {X}'s lines from a row of channel c1: it kept changing "
        "under concurrent writes; run forget again")


async def test_rows_others_emptied_meanwhile_count_no_lines_as_removed(stm: Stm) -> None:
    """c2 is deleted (a clear, the janitor) and c3's window moves on without the
    user's line, each just before forget's rewrite of it commits."""
    host = host_of(stm)
    await seed(stm, C1, C2, C3)

    async def meanwhile(key: MemoryKey) -> None:
        if key == C2:
            await host.delete_memories(MemoryFilter(server_id=G, channel_id="c2"))
        elif key == C3:
            await host.host_writes(C3, (Y, "y-c3"), (Y, "y-later"))

    host.before_replace = meanwhile
    result = await stm.admin.forget_user(X)
    assert (result.rows_changed, result.lines_removed) == ((C1,), 1)
    assert await host.get_memory(C2) is None
    c3 = await host.get_memory(C3)
    assert c3 is not None and [m.content for m in c3.messages] == ["y-c3", "y-later"]


async def test_an_own_row_the_host_writes_again_during_forget_goes_too(stm: Stm) -> None:
    """Between deleting the user's own rows and looking for their lines, the
    host records another of their DM turns: that row is the user's too."""
    host = host_of(stm)
    await seed(stm, C1)
    await host.host_writes(OWN, (X, "x-dm"))
    scans = 0

    async def x_speaks_in_their_dm() -> None:
        nonlocal scans
        scans += 1
        if scans == 1:
            await host.host_writes(OWN, (X, "x-dm-again"))

    host.before_scan = x_speaks_in_their_dm
    result = await stm.admin.forget_user(X)

    assert result.rows_removed == (OWN,)
    assert (result.rows_changed, result.lines_removed) == ((C1,), 1)
    assert await host.get_memory(OWN) is None
    assert not await host.rows_with_author(X)


@pytest.mark.parametrize("last_write", ["deletes the row", "drops the user's line"])
async def test_a_row_whose_last_concurrent_write_removed_the_user_needs_no_more_tries(
        stm: Stm, last_write: str) -> None:
    """The row changed under every rewrite; the last change took the user's
    lines away (a clear, or the window moving on): nothing is left to do, so
    forget finishes instead of reporting a row that kept changing."""
    host = host_of(stm)
    await seed(stm, C1)
    tries = 0

    async def another_turn(key: MemoryKey) -> None:
        nonlocal tries
        tries += 1
        if tries < MAX_ATTEMPTS_PER_ROW:
            await host.host_writes(key, (Y, "y-c1"), (X, f"x-{tries}"))
        elif last_write == "deletes the row":
            await host.delete_memories(MemoryFilter(server_id=G, channel_id="c1"))
        else:
            await host.host_writes(key, (Y, "y-c1"), (Y, "y-later"))

    host.before_replace = another_turn
    result = await stm.admin.forget_user(X)

    assert tries == MAX_ATTEMPTS_PER_ROW
    assert (result.rows_changed, result.lines_removed) == ((), 0)
    assert not await host.rows_with_author(X)


async def test_own_rows_deleted_before_the_connection_dropped_are_not_shown_from_cache(
        stm: Stm) -> None:
    await stm.engine.capture([CaptureWrite(key=OWN, now_ms=stm.clock.now_ms(),
                                    messages=authored((X, "x-dm")))])
    assert (await stm.engine.user_view(X)).memories.records  # cached now
    host_of(stm).fail_after = "delete_memories"
    with pytest.raises(StorageError, match="connection was lost"):
        await stm.admin.forget_user(X)
    assert not (await stm.engine.user_view(X)).memories.records


async def test_lines_removed_before_the_connection_dropped_are_not_shown_from_cache(
        stm: Stm) -> None:
    await seed(stm, C1)
    assert (await stm.engine.server_memories(G)).records  # cached now
    host_of(stm).fail_after = "replace_messages"
    with pytest.raises(StorageError, match="connection was lost"):
        await stm.admin.forget_user(X)
    [row] = (await stm.engine.server_memories(G)).records.values()
    assert [m.author_id for m in row.messages] == [Y]


async def test_an_opt_in_whose_write_failed_after_committing_is_read_again(stm: Stm) -> None:
    """The connection drops right after the opt-in committed: the cache holds
    no older answer, so the user's next turn reads what the database has."""
    host = host_of(stm)
    assert not (await stm.engine.user_view(X)).prefs.crossserver_opt_in  # cached: not opted in
    real = host.set_user_prefs

    async def committed_then_lost(*args: Any, **kwargs: Any) -> Any:
        await real(*args, **kwargs)
        raise StorageError("set_user_prefs committed, then the connection was lost")

    host.set_user_prefs = committed_then_lost  # type: ignore[method-assign]
    with pytest.raises(StorageError, match="connection was lost"):
        await stm.admin.set_user_opt_in(X, opt_in=True)
    assert (await stm.engine.user_view(X)).prefs.crossserver_opt_in
