"""The writes a tool call makes: which rows, in which order, with which note and
TTLs, under the settings of the store that applies the call."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm
from stm_core.tool import apply
from stm_core.tool.writes import category_writes, summary_writes

from .test_apply_tool_call import SERVER_KEY, USER_KEY, dm_turn, guild_turn

HISTORY_OFF = Settings(memory_history_revisions=0, ttl_hours=2, summary_ttl_hours=3)


def test_a_guild_write_sets_the_live_row_first_then_the_users_copy() -> None:
    settings = Settings()
    writes = summary_writes(guild_turn(), settings, 1234, "The party met Bob.")
    assert [w.key for w in writes] == [SERVER_KEY, USER_KEY]
    assert [w.reset_counter for w in writes] == [True, False]
    for w in writes:
        assert (w.set_summary, w.summary, w.set_categories, dict(w.categories)) == (
            True, "The party met Bob.", False, {})
        assert (w.now_ms, w.persona_lineage_id, w.parent_channel_id) == (1234, "L1", "forum")
        assert (w.crude_ttl_ms, w.summary_ttl_ms) == (settings.crude_ttl_ms,
                                                       settings.summary_ttl_ms)
        assert w.revision is not None and w.revision.author == "model"
        assert w.revision.keep == settings.memory_history_revisions + 1
        assert not w.clear_messages


def test_a_dm_write_sets_the_users_row_only_and_resets_it() -> None:
    (write,) = category_writes(dm_turn(), Settings(), 5, {"goals": "find the bell"})
    assert write.key == MemoryKey.user("u1", "d1", "p1", None)
    assert write.reset_counter
    assert (write.set_categories, dict(write.categories), write.set_summary,
            write.summary) == (True, {"goals": "find the bell"}, False, None)


def test_each_settings_object_gets_its_own_note_and_ttls() -> None:
    with_history = summary_writes(guild_turn(), Settings(), 1, "a")
    without = summary_writes(guild_turn(), HISTORY_OFF, 1, "a")
    again = summary_writes(guild_turn(), Settings(memory_history_revisions=3), 1, "a")
    assert all(w.revision is None for w in without)
    assert [(w.crude_ttl_ms, w.summary_ttl_ms) for w in without] == [(7_200_000,
                                                                      10_800_000)] * 2
    assert with_history[0].revision is not None
    assert [w.revision.keep for w in again if w.revision is not None] == [4, 4]


async def test_two_stores_with_other_settings_each_write_under_their_own(
        open_stm: Any, db_url: str, tmp_path: Any) -> None:
    """Calls alternating between a store that keeps history and one that does
    not: each write follows its own store's settings, never the other's."""
    other_url = (f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
                 if db_url.startswith("sqlite") else db_url)
    async with open_stm(db_url) as keeps, open_stm(other_url, settings=HISTORY_OFF) as plain:
        for i in range(3):
            assert (await keeps.apply_tool_call(guild_turn(), {"summary": f"kept {i}"})).ok
            assert (await plain.apply_tool_call(guild_turn(channel_id="c2"),
                                                {"summary": f"plain {i}"})).ok
        kept = await keeps.adapter.list_revisions(SERVER_KEY)
        plain_key = MemoryKey.server("g1", "c2", "p1")
        unkept = await plain.adapter.list_revisions(plain_key)
    assert [r.summary for r in kept] == ["kept 2", "kept 1", "kept 0"]
    assert {r.author for r in kept} == {"model"}
    assert unkept == []


# -- the once-per-turn guard ------------------------------------------------------------

@pytest.fixture
def nothing_in_progress() -> Iterator[None]:
    assert not apply._in_progress
    yield
    assert not apply._in_progress, "a finished call left its turn marked in progress"


async def test_a_call_cancelled_mid_write_frees_its_turn(
        stm: Stm, monkeypatch: pytest.MonkeyPatch, nothing_in_progress: None) -> None:
    started = asyncio.Event()

    async def stuck(writes: list[MemoryWrite]) -> list[Any]:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    monkeypatch.setattr(stm.engine, "write_memory", stuck)
    turn = guild_turn()
    call = asyncio.ensure_future(stm.apply_tool_call(turn, {"summary": "x"}))
    await started.wait()
    assert turn in apply._in_progress
    # A parallel call of the same turn is refused while the first one runs.
    assert (await stm.apply_tool_call(turn, {"summary": "y"})).code == "already_updated"
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    monkeypatch.undo()
    result = await stm.apply_tool_call(turn, {"summary": "retried"})
    assert result.ok, result.message


async def test_refusals_and_failures_leave_nothing_in_progress(
        stm: Stm, nothing_in_progress: None) -> None:
    for arguments in ({"summary": ""}, "not json", {"summary": 3}, {"summary": "ok"}):
        await stm.apply_tool_call(guild_turn(), arguments)


class _Arguments(Mapping[str, object]):
    """A mapping that is not a dict (some hosts hand over their own types)."""

    def __init__(self, values: dict[str, object]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> object:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@pytest.mark.parametrize("wrap", [_Arguments, types.MappingProxyType])
async def test_any_mapping_is_accepted_as_arguments(stm: Stm, wrap: Any) -> None:
    result = await stm.apply_tool_call(guild_turn(), wrap({"summary": "  mapped  "}))
    assert result.ok and result.written == {"summary": "mapped"}
    record = await stm.adapter.get_memory(SERVER_KEY)
    assert record is not None and record.summary == "mapped"


async def test_a_dm_summary_resets_the_users_counter(stm: Stm) -> None:
    from stm_core.storage.records import CaptureWrite

    key = MemoryKey.user("u1", "d1", "p1", None)
    await stm.engine.capture([CaptureWrite(key=key, messages=(), now_ms=stm.clock.now_ms(),
                                    counter_increment=3)])
    turn: Turn = dm_turn()
    assert (await stm.apply_tool_call(turn, {"summary": "dm"})).ok
    record = await stm.adapter.get_memory(key)
    assert record is not None
    assert (record.summary, record.turns_since_refresh, record.last_refreshed_turn) == (
        "dm", 0, 1)
