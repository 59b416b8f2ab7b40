"""The storage contract as a test suite any adapter can run against itself.

Subclass :class:`StorageAdapterConformance` in a test module and provide an
``adapter`` fixture that yields a set-up adapter on an empty database::

    import pytest
    from stm_core.testing.conformance import StorageAdapterConformance

    class TestMyAdapter(StorageAdapterConformance):
        @pytest.fixture
        async def adapter(self, tmp_path):
            a = MyAdapter(...)
            await a.setup()
            yield a
            await a.aclose()

Adapters with the optional :class:`~stm_core.storage.protocol.MemoryHistory`
capability also subclass :class:`MemoryHistoryConformance`; likewise
:class:`UserErasureConformance`, :class:`TimedPurgeConformance` and
:class:`BoundedReadsConformance`.

The tests are ``async def``: run them with pytest-asyncio in auto mode
(``asyncio_mode = "auto"`` in the pytest configuration), or mark the class
with ``@pytest.mark.asyncio``. Times are explicit ``now_ms`` values, so no
clock is needed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

from stm_core.errors import ValidationError
from stm_core.models import CrudeMessage
from stm_core.storage.newest import newest
from stm_core.storage.protocol import (
    AtomicServerEdits,
    BoundedReads,
    MemoryHistory,
    StorageAdapter,
    StorageInventory,
    TimedPurge,
    UserErasure,
)
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    MemoryFilter,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    NewestRows,
    RevisionNote,
    ServerSettings,
    UserPrefs,
)

NOW = 1_767_225_600_000
HOUR = 3_600_000
#: The default TTLs of CaptureWrite and MemoryWrite.
CRUDE_TTL = 12 * HOUR
SUMMARY_TTL = 24 * HOUR

GUILD = "100000000000000001"
OTHER_GUILD = "100000000000000002"
USER = "200000000000000001"
OTHER_USER = "200000000000000002"


def messages(*texts: str, at: int = NOW) -> tuple[CrudeMessage, ...]:
    return tuple(CrudeMessage(role="user" if i % 2 == 0 else "model", content=t,
                              speaker_name="Ann" if i % 2 == 0 else None, timestamp_ms=at + i)
                 for i, t in enumerate(texts))


def server_key(channel: str = "c1", guild: str = GUILD, persona: str | None = None) -> MemoryKey:
    return MemoryKey.server(guild, channel, persona)


def user_key(channel: str = "c1", user: str = USER, guild: str | None = GUILD,
             persona: str | None = None) -> MemoryKey:
    return MemoryKey.user(user, channel, persona, guild)


async def capture(adapter: StorageAdapter, key: MemoryKey, *, now: int = NOW, inc: int = 1,
                  texts: tuple[str, ...] = ("hello",), **kw: object) -> MemoryRecord:
    (record,) = await adapter.capture([CaptureWrite(
        key=key, messages=messages(*texts, at=now), now_ms=now, counter_increment=inc,
        **kw)])  # type: ignore[arg-type]
    return record


async def write(adapter: StorageAdapter, key: MemoryKey, *, now: int = NOW,
                **kw: object) -> MemoryRecord:
    (record,) = await adapter.write_memory([MemoryWrite(key=key, now_ms=now,
                                                        **kw)])  # type: ignore[arg-type]
    return record


async def summarize(adapter: StorageAdapter, key: MemoryKey, summary: str, *, now: int = NOW,
                    categories: Mapping[str, str] | None = None) -> MemoryRecord:
    return await write(adapter, key, now=now, set_summary=True, summary=summary,
                       set_categories=categories is not None, categories=categories or {})


def keys(records: list[MemoryRecord]) -> set[MemoryKey]:
    return {r.key for r in records}


class StorageAdapterConformance:
    """Every behaviour of :class:`~stm_core.storage.protocol.StorageAdapter`."""

    # -- setup ---------------------------------------------------------------------
    async def test_is_a_storage_adapter(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, StorageAdapter)
        assert isinstance(adapter.name, str) and adapter.name

    async def test_setup_again_changes_nothing(self, adapter: StorageAdapter) -> None:
        record = await capture(adapter, server_key())
        status = await adapter.setup()
        assert not status.created
        assert status.from_version == status.to_version
        assert await adapter.get_memory(server_key()) == record

    # -- capture -------------------------------------------------------------------
    async def test_capture_creates_a_row(self, adapter: StorageAdapter) -> None:
        record = await capture(adapter, server_key(), texts=("hi", "hello Ann"), inc=1)
        assert record.key == server_key()
        assert record.rev == 1
        assert record.turns_since_refresh == 1
        assert record.last_refreshed_turn == 0
        assert record.updated_at_ms == NOW
        assert record.summary is None and dict(record.categories) == {}
        assert record.messages == messages("hi", "hello Ann")
        assert await adapter.get_memory(server_key()) == record

    async def test_capture_without_increment_starts_the_counter_at_zero(
            self, adapter: StorageAdapter) -> None:
        record = await capture(adapter, server_key(), inc=0)
        assert record.turns_since_refresh == 0

    async def test_capture_adds_to_the_counter_and_replaces_messages(
            self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(), texts=("one",))
        await capture(adapter, server_key(), texts=("one", "two"), now=NOW + 1)
        record = await capture(adapter, server_key(), texts=("two", "three"), now=NOW + 2, inc=2)
        assert record.turns_since_refresh == 4
        assert record.messages == messages("two", "three", at=NOW + 2)
        assert record.updated_at_ms == NOW + 2
        assert record.rev == 3

    async def test_capture_keeps_summary_and_categories(self, adapter: StorageAdapter) -> None:
        await summarize(adapter, server_key(), "the plan", categories={"mood": "calm"})
        record = await capture(adapter, server_key(), now=NOW + HOUR)
        assert record.summary == "the plan"
        assert dict(record.categories) == {"mood": "calm"}

    async def test_capture_sets_lineage_and_parent_only_when_given(
            self, adapter: StorageAdapter) -> None:
        first = await capture(adapter, server_key(), persona_lineage_id="L1",
                              parent_channel_id="parent")
        assert (first.persona_lineage_id, first.parent_channel_id) == ("L1", "parent")
        kept = await capture(adapter, server_key(), now=NOW + 1)
        assert (kept.persona_lineage_id, kept.parent_channel_id) == ("L1", "parent")
        changed = await capture(adapter, server_key(), now=NOW + 2, persona_lineage_id="L2")
        assert (changed.persona_lineage_id, changed.parent_channel_id) == ("L2", "parent")

    async def test_capture_returns_rows_in_the_order_given(self, adapter: StorageAdapter) -> None:
        order = [user_key(), server_key(), user_key(guild=None), server_key("c2")]
        records = await adapter.capture([
            CaptureWrite(key=k, messages=messages("x"), now_ms=NOW, counter_increment=1)
            for k in order])
        assert [r.key for r in records] == order
        assert await adapter.capture([]) == []

    async def test_one_call_may_capture_a_key_twice(self, adapter: StorageAdapter) -> None:
        first, second = await adapter.capture([
            CaptureWrite(key=server_key(), messages=messages("a"), now_ms=NOW,
                         counter_increment=1),
            CaptureWrite(key=server_key(), messages=messages("a", "b"), now_ms=NOW + 1,
                         counter_increment=1)])
        assert (first.rev, first.turns_since_refresh) == (1, 1)
        assert (second.rev, second.turns_since_refresh) == (2, 2)
        assert await adapter.get_memory(server_key()) == second

    async def test_concurrent_captures_on_one_key_are_all_counted(
            self, adapter: StorageAdapter) -> None:
        n = 250
        results = await asyncio.gather(*(
            capture(adapter, server_key(), now=NOW + i, texts=(f"m{i}",)) for i in range(n)))
        final = await adapter.get_memory(server_key())
        assert final is not None
        assert final.turns_since_refresh == n
        assert sorted(r.rev for r in results) == list(range(1, n + 1))
        # Every caller saw the counter its own write produced.
        assert sorted(r.turns_since_refresh for r in results) == list(range(1, n + 1))

    async def test_capture_clears_an_expired_summary(self, adapter: StorageAdapter) -> None:
        await summarize(adapter, server_key(), "old news", categories={"mood": "grim"})
        record = await capture(adapter, server_key(), now=NOW + SUMMARY_TTL + 1,
                               texts=("fresh",))
        assert record.summary is None
        assert dict(record.categories) == {}
        assert record.messages == messages("fresh", at=NOW + SUMMARY_TTL + 1)

    async def test_capture_keeps_content_at_exactly_the_ttl(self, adapter: StorageAdapter) -> None:
        await summarize(adapter, server_key(), "still good")
        record = await capture(adapter, server_key(), now=NOW + SUMMARY_TTL)
        assert record.summary == "still good"

    async def test_category_only_rows_expire_after_the_crude_ttl(
            self, adapter: StorageAdapter) -> None:
        for channel in ("c1", "c2"):
            await write(adapter, server_key(channel), set_categories=True,
                        categories={"topic": "cats"})
        kept = await capture(adapter, server_key("c1"), now=NOW + CRUDE_TTL)
        cleared = await capture(adapter, server_key("c2"), now=NOW + CRUDE_TTL + 1)
        assert dict(kept.categories) == {"topic": "cats"}
        assert dict(cleared.categories) == {}

    async def test_capture_uses_the_ttls_it_is_given(self, adapter: StorageAdapter) -> None:
        await summarize(adapter, server_key(), "short-lived")
        record = await capture(adapter, server_key(), now=NOW + 1001, summary_ttl_ms=1000,
                               crude_ttl_ms=500)
        assert record.summary is None

    # -- write_memory ----------------------------------------------------------------
    async def test_write_memory_creates_a_row(self, adapter: StorageAdapter) -> None:
        record = await summarize(adapter, user_key(), "met Ann", categories={"who": "Ann"})
        assert record.rev == 1
        assert record.summary == "met Ann"
        assert dict(record.categories) == {"who": "Ann"}
        assert record.messages == ()
        assert record.turns_since_refresh == 0
        assert record.updated_at_ms == NOW
        assert await adapter.get_memory(user_key()) == record

    async def test_write_memory_changes_only_the_flagged_parts(
            self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(), texts=("keep me",), inc=2)
        await summarize(adapter, server_key(), "s1", categories={"a": "1"})
        only_summary = await write(adapter, server_key(), now=NOW + 1, set_summary=True,
                                   summary="s2")
        assert only_summary.summary == "s2"
        assert dict(only_summary.categories) == {"a": "1"}
        assert only_summary.messages == messages("keep me")
        assert only_summary.turns_since_refresh == 2
        only_categories = await write(adapter, server_key(), now=NOW + 2, set_categories=True,
                                      categories={"b": "2"})
        assert only_categories.summary == "s2"
        assert dict(only_categories.categories) == {"b": "2"}
        assert only_categories.updated_at_ms == NOW + 2

    async def test_write_memory_can_clear_the_summary_and_messages(
            self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(), texts=("x",))
        await summarize(adapter, server_key(), "gone soon")
        record = await write(adapter, server_key(), now=NOW + 1, set_summary=True,
                             summary=None, clear_messages=True)
        assert record.summary is None
        assert record.messages == ()

    async def test_reset_counter(self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(), inc=3)
        first = await write(adapter, server_key(), set_summary=True, summary="s",
                            reset_counter=True)
        assert (first.turns_since_refresh, first.last_refreshed_turn) == (0, 1)
        await capture(adapter, server_key(), now=NOW + 1, inc=1)
        second = await write(adapter, server_key(), now=NOW + 2, reset_counter=True)
        assert (second.turns_since_refresh, second.last_refreshed_turn) == (0, 2)
        assert second.summary == "s"

    async def test_write_memory_drops_expired_content(self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(), texts=("stale",))
        await summarize(adapter, server_key(), "stale summary", categories={"a": "1"})
        later = NOW + SUMMARY_TTL + 1
        record = await write(adapter, server_key(), now=later, set_categories=True,
                             categories={"b": "2"})
        assert record.summary is None
        assert dict(record.categories) == {"b": "2"}
        assert record.messages == ()

    async def test_every_write_raises_rev(self, adapter: StorageAdapter) -> None:
        revs = [(await capture(adapter, server_key())).rev,
                (await summarize(adapter, server_key(), "s")).rev,
                (await capture(adapter, server_key(), now=NOW + 1)).rev,
                (await write(adapter, server_key(), now=NOW + 2, reset_counter=True)).rev]
        assert revs == [1, 2, 3, 4]

    async def test_write_memory_returns_rows_in_the_order_given(
            self, adapter: StorageAdapter) -> None:
        order = [user_key(), server_key()]
        records = await adapter.write_memory([
            MemoryWrite(key=k, now_ms=NOW, set_summary=True, summary=f"s{i}")
            for i, k in enumerate(order)])
        assert [(r.key, r.summary) for r in records] == [(order[0], "s0"), (order[1], "s1")]
        assert await adapter.write_memory([]) == []

    # -- reads --------------------------------------------------------------------------
    async def test_get_memory_of_a_missing_row(self, adapter: StorageAdapter) -> None:
        assert await adapter.get_memory(server_key("nowhere")) is None

    async def test_load_server_memories_by_window_and_scope(
            self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key("c1"), now=NOW)
        await capture(adapter, server_key("c2"), now=NOW - 10 * HOUR)
        await capture(adapter, user_key("c1"), now=NOW)
        await capture(adapter, server_key("c9", guild=OTHER_GUILD), now=NOW)
        recent = await adapter.load_server_memories(GUILD, updated_since_ms=NOW - 5 * HOUR)
        assert keys(recent) == {server_key("c1")}
        wider = await adapter.load_server_memories(GUILD, updated_since_ms=NOW - 10 * HOUR)
        assert keys(wider) == {server_key("c1"), server_key("c2")}
        assert await adapter.load_server_memories("unknown", updated_since_ms=0) == []

    async def test_load_user_memories_spans_servers_and_dms(
            self, adapter: StorageAdapter) -> None:
        mine = {user_key("c1"), user_key("c7", guild=OTHER_GUILD), user_key("dm", guild=None)}
        for key in mine:
            await capture(adapter, key)
        await capture(adapter, server_key("c1"))
        await capture(adapter, user_key("c1", user=OTHER_USER))
        await capture(adapter, user_key("c3"), now=NOW - 30 * HOUR)
        loaded = await adapter.load_user_memories(USER, updated_since_ms=NOW - 24 * HOUR)
        assert keys(loaded) == mine

    async def test_dm_rows_have_no_server(self, adapter: StorageAdapter) -> None:
        record = await capture(adapter, user_key("dm", guild=None))
        assert record.key.server_id == ""
        assert await adapter.load_server_memories("", updated_since_ms=0) == []
        assert keys(await adapter.load_user_memories(USER, updated_since_ms=0)) == {record.key}

    async def test_personas_are_separate_rows(self, adapter: StorageAdapter) -> None:
        await capture(adapter, server_key(persona="p1"), inc=1)
        await capture(adapter, server_key(persona="p2"), inc=5)
        await capture(adapter, server_key(), inc=7)
        p1 = await adapter.get_memory(server_key(persona="p1"))
        assert p1 is not None and p1.turns_since_refresh == 1
        assert len(await adapter.load_server_memories(GUILD, updated_since_ms=0)) == 3

    async def test_unicode_and_large_text_round_trip(self, adapter: StorageAdapter) -> None:
        huge = "🧠 mémoire 記憶 \"quoted\" \\ back\nslash\t" * 5000
        texts = ("emoji 🎉👩‍👩‍👧 and RTL שלום", huge, "{\"json\": [1, 2]}", "")
        categories = {"humeur-été": "ça va 😊", "話題": huge, "quote\"key": "a\\b"}
        await capture(adapter, server_key(), texts=texts)
        written = await summarize(adapter, server_key(), huge, categories=categories)
        assert written.summary == huge
        assert dict(written.categories) == categories
        assert list(written.categories) == list(categories)
        stored = await adapter.get_memory(server_key())
        assert stored == written
        assert stored is not None and stored.messages == messages(*texts)
        (loaded,) = await adapter.load_server_memories(GUILD, updated_since_ms=0)
        assert loaded == written

    async def test_categories_keep_their_insertion_order(self, adapter: StorageAdapter) -> None:
        order = {"zeta": "1", "alpha": "2", "mid": "3"}
        await write(adapter, server_key(), set_categories=True, categories=order)
        stored = await adapter.get_memory(server_key())
        assert stored is not None and list(stored.categories) == ["zeta", "alpha", "mid"]

    # -- filters ----------------------------------------------------------------------
    async def _populate(self, adapter: StorageAdapter) -> list[MemoryKey]:
        all_keys = [server_key("c1"), server_key("c2"), user_key("c1"), user_key("c2"),
                    user_key("c1", user=OTHER_USER), user_key("dm", guild=None),
                    server_key("c1", guild=OTHER_GUILD), server_key("c1", persona="p1")]
        await adapter.capture([CaptureWrite(key=k, messages=messages("x"), now_ms=NOW)
                               for k in all_keys])
        return all_keys

    async def test_list_memories_by_filter(self, adapter: StorageAdapter) -> None:
        all_keys = await self._populate(adapter)
        by_channel = await adapter.list_memories(MemoryFilter(channel_id="c1"))
        assert keys(by_channel) == {k for k in all_keys if k.channel_id == "c1"}
        by_user = await adapter.list_memories(MemoryFilter(user_id=USER))
        assert keys(by_user) == {user_key("c1"), user_key("c2"), user_key("dm", guild=None)}
        server_scope = await adapter.list_memories(MemoryFilter(server_id=GUILD,
                                                                scope_kind="server"))
        assert keys(server_scope) == {server_key("c1"), server_key("c2"),
                                      server_key("c1", persona="p1")}
        by_persona = await adapter.list_memories(MemoryFilter(persona_id="p1"))
        assert keys(by_persona) == {server_key("c1", persona="p1")}

    async def test_delete_memories_by_channel(self, adapter: StorageAdapter) -> None:
        all_keys = await self._populate(adapter)
        removed = await adapter.delete_memories(MemoryFilter(channel_id="c1", server_id=GUILD))
        gone = {k for k in all_keys if k.channel_id == "c1" and k.server_id == GUILD}
        assert set(removed) == gone and len(removed) == len(gone)
        for key in all_keys:
            assert (await adapter.get_memory(key) is None) == (key in gone)

    async def test_delete_memories_of_a_user(self, adapter: StorageAdapter) -> None:
        await self._populate(adapter)
        removed = await adapter.delete_memories(MemoryFilter(user_id=USER, scope_kind="user"))
        assert set(removed) == {user_key("c1"), user_key("c2"), user_key("dm", guild=None)}
        assert await adapter.load_user_memories(USER, updated_since_ms=0) == []
        assert await adapter.count_memories() == 5
        assert await adapter.delete_memories(MemoryFilter(user_id=USER)) == []

    async def test_an_empty_filter_is_refused(self, adapter: StorageAdapter) -> None:
        await self._populate(adapter)
        with pytest.raises(ValidationError):
            await adapter.delete_memories(MemoryFilter())
        with pytest.raises(ValidationError):
            await adapter.list_memories(MemoryFilter())
        assert await adapter.count_memories() == 8

    # -- server settings and categories -----------------------------------------------------
    async def test_settings_default_when_none_are_stored(self, adapter: StorageAdapter) -> None:
        assert await adapter.load_server_settings(GUILD) == ServerSettings(server_id=GUILD)

    async def test_update_server_settings_changes_only_the_given_columns(
            self, adapter: StorageAdapter) -> None:
        first = await adapter.update_server_settings(GUILD, {"refresh_cadence": 7}, now_ms=NOW)
        assert first.refresh_cadence == 7 and first.updated_at_ms == NOW
        second = await adapter.update_server_settings(
            GUILD, {"render_mode": "supersede", "nudge_injection_depth": 4}, now_ms=NOW + 1)
        assert (second.refresh_cadence, second.render_mode, second.nudge_injection_depth) == (
            7, "supersede", 4)
        assert second.updated_at_ms == NOW + 1
        assert await adapter.load_server_settings(GUILD) == second
        assert await adapter.load_server_settings(OTHER_GUILD) == ServerSettings(
            server_id=OTHER_GUILD)

    async def test_a_setting_can_go_back_to_its_default(self, adapter: StorageAdapter) -> None:
        await adapter.update_server_settings(GUILD, {"crude_message_count": 3,
                                                     "tool_description_override": "Use it."},
                                             now_ms=NOW)
        reset = await adapter.update_server_settings(GUILD, {"crude_message_count": None},
                                                     now_ms=NOW + 1)
        assert reset.crude_message_count is None
        assert reset.tool_description_override == "Use it."

    async def test_every_setting_round_trips(self, adapter: StorageAdapter) -> None:
        changes: dict[str, object] = {
            "refresh_cadence": 9, "render_mode": "crude_summary", "crude_message_count": 4,
            "nudge_injection_depth": 0, "content_injection_depth": -1,
            "tool_description_override": "Tool ✍️", "update_nudge_override": "Nudge {x}",
            "stm_enabled": False, "private_channel_ids": frozenset({"c2", "c1"}),
            "privacy_bypass": True, "cache_policy": "stable", "prompt_budget_tokens": 750,
        }
        stored = await adapter.update_server_settings(GUILD, changes, now_ms=NOW)
        expected = ServerSettings(server_id=GUILD, updated_at_ms=NOW,
                                  **changes)  # type: ignore[arg-type]
        assert stored == expected
        assert await adapter.load_server_settings(GUILD) == expected

    async def test_unknown_setting_names_are_refused(self, adapter: StorageAdapter) -> None:
        with pytest.raises(ValidationError):
            await adapter.update_server_settings(GUILD, {"refresh_cadence": 3, "colour": "red"},
                                                 now_ms=NOW)
        assert await adapter.load_server_settings(GUILD) == ServerSettings(server_id=GUILD)

    async def test_replace_categories_orders_by_position_and_replaces(
            self, adapter: StorageAdapter) -> None:
        cats = [CategoryRecord(position=2, label="Plans", description="what is next"),
                CategoryRecord(position=0, label="Mood", description="how people feel"),
                CategoryRecord(position=1, label="Facts", description="things said")]
        settings, removed = await adapter.replace_categories(GUILD, cats, now_ms=NOW,
                                                             clear_server_memories=False)
        assert [c.label for c in settings.categories] == ["Mood", "Facts", "Plans"]
        assert removed == []
        loaded = await adapter.load_server_settings(GUILD)
        assert loaded.categories == settings.categories
        fewer, _ = await adapter.replace_categories(
            GUILD, [CategoryRecord(position=0, label="Only", description="one")],
            now_ms=NOW + 1, clear_server_memories=False)
        assert [c.label for c in fewer.categories] == ["Only"]
        none, _ = await adapter.replace_categories(GUILD, [], now_ms=NOW + 2,
                                                   clear_server_memories=False)
        assert none.categories == ()
        assert (await adapter.load_server_settings(GUILD)).categories == ()

    async def test_replace_categories_keeps_other_settings(self, adapter: StorageAdapter) -> None:
        await adapter.update_server_settings(GUILD, {"refresh_cadence": 3}, now_ms=NOW)
        settings, _ = await adapter.replace_categories(
            GUILD, [CategoryRecord(position=0, label="A", description="a")], now_ms=NOW + 1,
            clear_server_memories=False)
        assert settings.refresh_cadence == 3
        after = await adapter.update_server_settings(GUILD, {"render_mode": "supersede"},
                                                     now_ms=NOW + 2)
        assert [c.label for c in after.categories] == ["A"]

    async def test_replace_categories_can_clear_that_servers_memories(
            self, adapter: StorageAdapter) -> None:
        all_keys = await self._populate(adapter)
        _, removed = await adapter.replace_categories(
            GUILD, [CategoryRecord(position=0, label="New", description="n")], now_ms=NOW,
            clear_server_memories=True)
        gone = {k for k in all_keys if k.scope_kind == "server" and k.server_id == GUILD}
        assert set(removed) == gone
        for key in all_keys:
            assert (await adapter.get_memory(key) is None) == (key in gone)

    async def test_replace_categories_keeps_memories_unless_asked(
            self, adapter: StorageAdapter) -> None:
        await self._populate(adapter)
        _, removed = await adapter.replace_categories(GUILD, [], now_ms=NOW,
                                                      clear_server_memories=False)
        assert removed == []
        assert await adapter.count_memories() == 8

    # -- atomic server edits (optional capability) -------------------------------------
    @staticmethod
    def _atomic(adapter: StorageAdapter) -> AtomicServerEdits:
        if not isinstance(adapter, AtomicServerEdits):
            pytest.skip("the adapter does not offer AtomicServerEdits (optional)")
        return adapter

    async def test_change_private_channels_adds_and_removes(
            self, adapter: StorageAdapter) -> None:
        atomic = self._atomic(adapter)
        first = await atomic.change_private_channels(GUILD, add={"a", "b"}, now_ms=NOW)
        assert first.private_channel_ids == {"a", "b"}
        await adapter.update_server_settings(GUILD, {"refresh_cadence": 4}, now_ms=NOW + 1)
        more = await atomic.change_private_channels(GUILD, add={"c", "a"}, remove={"b"},
                                                    now_ms=NOW + 2)
        assert more.private_channel_ids == {"a", "c"}
        assert more.refresh_cadence == 4
        assert (await adapter.load_server_settings(GUILD)).private_channel_ids == {"a", "c"}
        gone = await atomic.change_private_channels(GUILD, remove={"a", "c", "zz"},
                                                    now_ms=NOW + 3)
        assert gone.private_channel_ids == frozenset()
        with pytest.raises(ValidationError):
            await atomic.change_private_channels(GUILD, add="abc", now_ms=NOW + 4)

    async def test_concurrent_private_channel_adds_are_all_kept(
            self, adapter: StorageAdapter) -> None:
        atomic = self._atomic(adapter)
        await atomic.change_private_channels(GUILD, add={"keep", "drop0"}, now_ms=NOW)
        await asyncio.gather(
            *(atomic.change_private_channels(GUILD, add={f"c{i}"}, now_ms=NOW + i)
              for i in range(25)),
            *(atomic.change_private_channels(GUILD, remove={"drop0"}, now_ms=NOW)
              for _ in range(3)))
        stored = await adapter.load_server_settings(GUILD)
        assert stored.private_channel_ids == {"keep"} | {f"c{i}" for i in range(25)}

    async def test_replace_server_config_writes_settings_and_categories_together(
            self, adapter: StorageAdapter) -> None:
        atomic = self._atomic(adapter)
        keys = await self._populate(adapter)
        cats = [CategoryRecord(position=0, label="Mood", description="how people feel")]
        settings, removed = await atomic.replace_server_config(
            GUILD, {"refresh_cadence": 9, "private_channel_ids": ["p"]}, cats, now_ms=NOW)
        server_rows = {k for k in keys if k.scope_kind == "server" and k.server_id == GUILD}
        assert set(removed) == server_rows  # the categories changed
        assert settings.refresh_cadence == 9 and settings.private_channel_ids == {"p"}
        assert [c.label for c in settings.categories] == ["Mood"]
        assert await adapter.load_server_settings(GUILD) == settings
        await summarize(adapter, server_key("c9"), "kept")
        same, none_removed = await atomic.replace_server_config(
            GUILD, {"refresh_cadence": None}, cats, now_ms=NOW + 1)
        assert none_removed == []  # same categories: memories stay
        assert same.refresh_cadence is None and same.private_channel_ids == {"p"}
        assert await adapter.get_memory(server_key("c9")) is not None
        _, cleared = await atomic.replace_server_config(GUILD, {}, [], now_ms=NOW + 2)
        assert cleared == [server_key("c9")]
        with pytest.raises(ValidationError):
            await atomic.replace_server_config(GUILD, {"nope": 1}, [], now_ms=NOW + 3)

    # -- user preferences ----------------------------------------------------------------
    async def test_user_prefs_default_and_round_trip(self, adapter: StorageAdapter) -> None:
        assert await adapter.load_user_prefs(USER) == UserPrefs(user_id=USER)
        on = await adapter.set_user_prefs(USER, crossserver_opt_in=True, now_ms=NOW)
        assert on == UserPrefs(user_id=USER, crossserver_opt_in=True)
        assert await adapter.load_user_prefs(USER) == on
        off = await adapter.set_user_prefs(USER, crossserver_opt_in=False, now_ms=NOW + 1)
        assert await adapter.load_user_prefs(USER) == off == UserPrefs(user_id=USER)
        assert await adapter.load_user_prefs(OTHER_USER) == UserPrefs(user_id=OTHER_USER)

    # -- retention ---------------------------------------------------------------------------
    async def test_purge_deletes_old_rows_in_batches(self, adapter: StorageAdapter) -> None:
        cutoff = NOW - 90 * 24 * HOUR
        await adapter.capture([CaptureWrite(key=server_key(f"old{i}"), messages=(),
                                            now_ms=cutoff - 1 - i) for i in range(25)])
        await adapter.capture([CaptureWrite(key=server_key(f"new{i}"), messages=(),
                                            now_ms=cutoff + i) for i in range(5)])
        batches = [await adapter.purge_older_than(cutoff, batch_size=10) for _ in range(4)]
        assert batches == [10, 10, 5, 0]
        assert await adapter.count_memories() == 5
        left = await adapter.load_server_memories(GUILD, updated_since_ms=0)
        assert keys(left) == {server_key(f"new{i}") for i in range(5)}

    async def test_count_memories(self, adapter: StorageAdapter) -> None:
        assert await adapter.count_memories() == 0
        await self._populate(adapter)
        assert await adapter.count_memories() == 8

    async def test_records_are_values(self, adapter: StorageAdapter) -> None:
        """What a write returns equals what a later read returns, field by field."""
        record = await capture(adapter, server_key(), persona_lineage_id="L",
                               parent_channel_id="P")
        fetched = await adapter.get_memory(server_key())
        assert fetched is not None
        assert attrs.asdict(fetched) == attrs.asdict(record)


async def noted(adapter: StorageAdapter, key: MemoryKey, summary: str, *, keep: int = 3,
                now: int = NOW, actor: str | None = None) -> MemoryRecord:
    (record,) = await adapter.write_memory([MemoryWrite(
        key=key, now_ms=now, set_summary=True, summary=summary,
        revision=RevisionNote(author="admin" if actor else "model", actor=actor, keep=keep))])
    return record


class MemoryHistoryConformance:
    """The optional history capability: revisions written with the row, trimmed
    to ``keep``, deleted with the row. Subclass it beside
    :class:`StorageAdapterConformance`, with the same ``adapter`` fixture."""

    async def test_has_the_capability(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)

    async def test_a_noted_write_is_a_revision(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)
        await summarize(adapter, server_key(), "without a note")
        assert await adapter.list_revisions(server_key()) == []
        record = await noted(adapter, server_key(), "by an admin", actor="mod", now=NOW + 1)
        (revision,) = await adapter.list_revisions(server_key())
        assert (revision.rev, revision.summary, revision.author, revision.actor,
                revision.written_at_ms, revision.key) == (
            record.rev, "by an admin", "admin", "mod", NOW + 1, server_key())
        categories = {"goals": "find the bell", "hp": "12"}
        (after,) = await adapter.write_memory([MemoryWrite(
            key=server_key(), now_ms=NOW + 2, set_categories=True, categories=categories,
            revision=RevisionNote(author="import", restored_from=record.rev))])
        newest = (await adapter.list_revisions(server_key()))[0]
        assert (newest.rev, dict(newest.categories), newest.summary, newest.author,
                newest.restored_from) == (after.rev, categories, "by an admin", "import",
                                          record.rev)

    async def test_only_the_newest_are_kept(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)
        written = [await noted(adapter, server_key(), f"v{i}", keep=3) for i in range(6)]
        kept = await adapter.list_revisions(server_key())
        assert [r.rev for r in kept] == [w.rev for w in reversed(written[-3:])]
        assert [r.summary for r in kept] == ["v5", "v4", "v3"]
        assert await adapter.list_revisions(server_key("other")) == []

    async def test_concurrent_noted_writes_stay_within_the_limit(
            self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)
        await asyncio.gather(*(noted(adapter, server_key(), f"w{i}", keep=4)
                               for i in range(12)))
        record = await adapter.get_memory(server_key())
        assert record is not None
        kept = await adapter.list_revisions(server_key())
        assert [r.rev for r in kept] == list(range(record.rev, record.rev - 4, -1))
        assert kept[0].summary == record.summary

    async def test_one_call_notes_every_row(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)
        note = RevisionNote(author="model", keep=2)
        await adapter.write_memory([
            MemoryWrite(key=k, now_ms=NOW, set_summary=True, summary=k.scope_kind,
                        revision=note) for k in (server_key(), user_key())])
        for k in (server_key(), user_key()):
            assert [r.summary for r in await adapter.list_revisions(k)] == [k.scope_kind]

    async def test_revisions_go_with_their_row(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, MemoryHistory)
        for k in (server_key("c1"), server_key("c2"), user_key("c3")):
            await noted(adapter, k, "kept until the row goes")
        await adapter.delete_memories(MemoryFilter(channel_id="c1"))
        assert await adapter.list_revisions(server_key("c1")) == []
        assert len(await adapter.list_revisions(server_key("c2"))) == 1
        await adapter.replace_categories(GUILD, [], now_ms=NOW, clear_server_memories=True)
        assert await adapter.list_revisions(server_key("c2")) == []
        assert await adapter.purge_older_than(NOW + 1, batch_size=10) == 1
        assert await adapter.list_revisions(user_key("c3")) == []
        # A row created again under the same key starts without history.
        await noted(adapter, user_key("c3"), "new")
        assert [r.summary for r in await adapter.list_revisions(user_key("c3"))] == ["new"]


def authored(*lines: tuple[str | None, str], at: int = NOW) -> tuple[CrudeMessage, ...]:
    """Lines given as ``(author_id, text)``."""
    return tuple(CrudeMessage(role="user", content=text, speaker_name=author,
                              timestamp_ms=at + i, author_id=author)
                 for i, (author, text) in enumerate(lines))


class TimedPurgeConformance:
    """The optional :class:`~stm_core.storage.protocol.TimedPurge` capability:
    each purge batch says how long it held the database. Mix it into the test
    class of an adapter that offers it."""

    async def test_offers_the_capability(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, TimedPurge)
        assert adapter.last_purge_seconds is None  # no batch yet

    async def test_every_batch_is_timed_even_an_empty_one(self, adapter: Any) -> None:
        cutoff = NOW - 90 * 24 * HOUR
        await adapter.capture([CaptureWrite(key=server_key(f"old{i}"), messages=(),
                                            now_ms=cutoff - 1 - i) for i in range(5)])
        for expected in (5, 0):
            started = time.perf_counter()
            assert await adapter.purge_older_than(cutoff, batch_size=10) == expected
            wall = time.perf_counter() - started
            held = adapter.last_purge_seconds
            assert isinstance(held, float)
            assert 0 <= held <= wall


#: Channel ids whose byte order differs from a locale's ("B" before "a" and
#: "b", "10" before "9", "é" after every ASCII id), all written at one time.
TIED_CHANNELS = ("a", "B", "b", "Z", "\u00e9", "e", "10", "9", "c-1", "c_1")


class BoundedReadsConformance:
    """The optional :class:`~stm_core.storage.protocol.BoundedReads`
    capability: a server's newest rows, filtered and bounded, exactly as
    :func:`stm_core.storage.newest.newest` cuts them from the whole load
    window. Mix it into the test class of an adapter that offers it."""

    async def test_offers_the_capability(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, BoundedReads)
        assert await adapter.newest_server_memories([]) == []

    async def _seed(self, adapter: StorageAdapter) -> None:
        """Rows of two lineages, with and without summaries, threads, ties,
        crude rows past their TTL, and rows the reads must never return."""
        for i, channel in enumerate(TIED_CHANNELS):
            await capture(adapter, server_key(channel), now=NOW,
                          persona_lineage_id="L1" if i % 3 else "L2",
                          parent_channel_id="p1" if i % 4 == 0 else None)
        for i in range(30):
            key = server_key(f"spread{i:02d}", persona=f"p{i % 2}")
            at = NOW - (i + 1) * HOUR // 2
            await capture(adapter, key, now=at, persona_lineage_id="L1" if i % 2 else "L2",
                          parent_channel_id="p2" if i % 5 == 0 else None)
            if i % 3 == 0:
                await summarize(adapter, key, f"summary {i}", now=at)
        await summarize(adapter, server_key("blank"), "", now=NOW - HOUR)
        await capture(adapter, user_key("a"), now=NOW)
        await capture(adapter, server_key("a", guild=OTHER_GUILD), now=NOW)

    async def test_newest_rows_are_the_window_cut_down(self, adapter: Any) -> None:
        await self._seed(adapter)
        window = await adapter.load_server_memories(GUILD, updated_since_ms=0)
        assert len(window) == len(TIED_CHANNELS) + 31
        reads = [NewestRows(server_id=GUILD, updated_since_ms=since, limit=limit,
                            lineage=lineage, hidden_channels=hidden, crude_since_ms=crude)
                 for since in (0, NOW - 6 * HOUR)
                 for limit in (1, 4, 7, 100)
                 for lineage in (None, "L1")
                 for hidden in (frozenset(), frozenset({"a", "p1", "spread03"}))
                 for crude in (None, NOW - 3 * HOUR)]
        answers = await adapter.newest_server_memories(reads)
        assert len(answers) == len(reads)
        for read, rows in zip(reads, answers, strict=True):
            assert rows == newest(window, read), read
        assert answers[-1] and all(r.key.server_id == GUILD for rows in answers for r in rows)

    async def test_rows_of_one_time_stand_in_byte_order(self, adapter: Any) -> None:
        for channel in TIED_CHANNELS:
            await capture(adapter, server_key(channel), now=NOW)
        await capture(adapter, server_key("older"), now=NOW - 1)
        (rows,) = await adapter.newest_server_memories([NewestRows(
            server_id=GUILD, updated_since_ms=0, limit=len(TIED_CHANNELS))])
        expected = sorted(TIED_CHANNELS, key=lambda c: c.encode(), reverse=True)
        assert [r.key.channel_id for r in rows] == expected
        assert expected[0] == "\u00e9" and expected[-1] == "10"

    async def test_filters_and_limit(self, adapter: Any) -> None:
        await capture(adapter, server_key("old"), now=NOW - 5 * HOUR, persona_lineage_id="L1")
        await summarize(adapter, server_key("kept"), "s", now=NOW - 4 * HOUR)
        await capture(adapter, server_key("thread"), now=NOW - 3 * HOUR,
                      parent_channel_id="private", persona_lineage_id="L1")
        await capture(adapter, server_key("private"), now=NOW - 2 * HOUR, persona_lineage_id="L1")
        await capture(adapter, server_key("other"), now=NOW - HOUR, persona_lineage_id="L2")
        await capture(adapter, server_key("new"), now=NOW, persona_lineage_id="L1")

        async def channels(**kw: Any) -> list[str]:
            read = NewestRows(**{"server_id": GUILD, "updated_since_ms": NOW - 10 * HOUR,
                                 "limit": 10, **kw})
            (rows,) = await adapter.newest_server_memories([read])
            return [r.key.channel_id for r in rows]

        assert await channels() == ["new", "other", "private", "thread", "kept", "old"]
        assert await channels(limit=2) == ["new", "other"]
        assert await channels(lineage="L1") == ["new", "private", "thread", "old"]
        assert await channels(hidden_channels=frozenset({"private"})) == [
            "new", "other", "kept", "old"]
        assert await channels(crude_since_ms=NOW - 4 * HOUR - 1) == [
            "new", "other", "private", "thread", "kept"]
        assert await channels(crude_since_ms=NOW) == ["new", "kept"]
        assert await channels(updated_since_ms=NOW - HOUR) == ["new", "other"]
        assert await channels(lineage="nobody") == []

    async def test_a_limit_below_one_is_refused(self, adapter: StorageAdapter) -> None:
        for limit in (0, -1, 1.5, True, "3"):
            with pytest.raises(ValidationError):
                NewestRows(server_id=GUILD, updated_since_ms=0, limit=limit)  # type: ignore[arg-type]


class UserErasureConformance:
    """The optional :class:`~stm_core.storage.protocol.UserErasure` and
    :class:`~stm_core.storage.protocol.StorageInventory` capabilities. Mix it
    into the test class of an adapter that offers them."""

    async def _put(self, adapter: Any, key: MemoryKey,
                   lines: tuple[CrudeMessage, ...], now: int = NOW) -> MemoryRecord:
        (record,) = await adapter.capture([CaptureWrite(key=key, messages=lines, now_ms=now)])
        return record  # type: ignore[no-any-return]

    async def test_offers_the_capabilities(self, adapter: StorageAdapter) -> None:
        assert isinstance(adapter, UserErasure)
        assert isinstance(adapter, StorageInventory)

    async def test_author_ids_round_trip_and_may_be_absent(self, adapter: Any) -> None:
        lines = authored((USER, "mine"), (None, "unknown author"), ("a_%\\\"'", "odd id"))
        stored = await self._put(adapter, server_key(), lines)
        assert stored.messages == lines
        fetched = await adapter.get_memory(server_key())
        assert fetched is not None and fetched.messages == lines

    async def test_rows_with_author_finds_every_scope_and_only_exact_ids(
            self, adapter: Any) -> None:
        await self._put(adapter, server_key("c1"), authored((USER, "a"), (OTHER_USER, "b")))
        await self._put(adapter, user_key("c1", user=OTHER_USER), authored((USER, "a")))
        await self._put(adapter, user_key("dm", guild=None), authored((USER, "dm")))
        await self._put(adapter, server_key("c2"), authored((OTHER_USER, "b")))
        # Look-alikes: a longer id, the id inside a line's text, LIKE wildcards.
        await self._put(adapter, server_key("c3"), authored((USER + "1", "x"),
                                                            (OTHER_USER, f'"author_id":"{USER}"')))
        found = await adapter.rows_with_author(USER)
        assert [r.key for r in found] == sorted(
            [server_key("c1"), user_key("c1", user=OTHER_USER), user_key("dm", guild=None)],
            key=lambda k: attrs.astuple(k))
        assert await adapter.rows_with_author("2000%") == []
        assert await adapter.rows_with_author("20000000000000000_") == []

    async def test_replace_messages_checks_the_revision(self, adapter: Any) -> None:
        row = await self._put(adapter, server_key(), authored((USER, "a"), (OTHER_USER, "b")))
        kept = row.messages[1:]
        done = await adapter.replace_messages(server_key(), kept, expected_rev=row.rev)
        assert done is not None
        assert done.messages == kept and done.rev == row.rev + 1
        assert done.updated_at_ms == row.updated_at_ms  # the TTL does not restart
        assert await adapter.get_memory(server_key()) == done
        stale = await adapter.replace_messages(server_key(), (), expected_rev=row.rev)
        assert stale is None
        assert (await adapter.get_memory(server_key())) == done
        assert await adapter.replace_messages(server_key("gone"), (), expected_rev=1) is None

    async def test_replace_messages_keeps_the_rest_of_the_row(self, adapter: Any) -> None:
        await self._put(adapter, server_key(), authored((USER, "a")))
        row = await summarize(adapter, server_key(), "kept summary", categories={"g": "goal"})
        done = await adapter.replace_messages(server_key(), (), expected_rev=row.rev)
        assert done is not None
        assert attrs.evolve(done, messages=row.messages, rev=row.rev) == row

    async def _revised(self, adapter: Any, key: MemoryKey, summary: str,
                       **categories: str) -> MemoryRecord:
        (record,) = await adapter.write_memory([MemoryWrite(
            key=key, now_ms=NOW, set_summary=True, summary=summary,
            set_categories=bool(categories), categories=categories,
            revision=RevisionNote(author="model", keep=5))])
        return record  # type: ignore[no-any-return]

    async def test_rows_mentioning_finds_texts_lines_and_revisions(self, adapter: Any) -> None:
        await self._revised(adapter, server_key("c1"), "ALICE wants a teal sky")
        await self._revised(adapter, server_key("c2"), "nothing", people='she is "Alice"')
        await self._put(adapter, server_key("c3"), authored((OTHER_USER, "hi alice")))
        await self._revised(adapter, server_key("c4"), "Alice paints")
        await self._revised(adapter, server_key("c4"), "a mural")  # only a revision names her
        await self._put(adapter, user_key("dm", guild=None), authored((USER, "ping <@42>")))
        await self._revised(adapter, server_key("c5"), "nobody here")
        await self._put(adapter, server_key("c6"), authored(("Alice", "speaker only")))
        found = [r.key for r in await adapter.rows_mentioning(["Alice", "<@42>"])]
        assert set(found) >= {server_key("c1"), server_key("c2"), server_key("c3"),
                              server_key("c4"), user_key("dm", guild=None)}
        assert server_key("c5") not in found
        assert found == sorted(found, key=attrs.astuple)
        assert await adapter.rows_mentioning(["100%", "a_b"]) == []

    async def test_clear_content_clears_the_memory_and_its_history(self, adapter: Any) -> None:
        await self._put(adapter, server_key(), authored((USER, "a"), (OTHER_USER, "b")))
        await self._revised(adapter, server_key(), "Alice", goal="teal")
        row = await self._revised(adapter, server_key(), "Alice again")
        await self._revised(adapter, server_key("other"), "kept")
        kept = row.messages[1:]
        assert await adapter.clear_content(server_key(), kept, expected_rev=row.rev - 1) is None
        done = await adapter.clear_content(server_key(), kept, expected_rev=row.rev)
        assert done is not None
        assert (done.messages, done.summary, dict(done.categories), done.rev) == (
            kept, None, {}, row.rev + 1)
        assert done.updated_at_ms == row.updated_at_ms
        assert await adapter.get_memory(server_key()) == done
        if isinstance(adapter, MemoryHistory):
            assert await adapter.list_revisions(server_key()) == []
            assert len(await adapter.list_revisions(server_key("other"))) == 1
        assert await adapter.clear_content(server_key("gone"), (), expected_rev=1) is None

    async def test_delete_user_prefs(self, adapter: Any) -> None:
        await adapter.set_user_prefs(USER, crossserver_opt_in=True, now_ms=NOW)
        await adapter.set_user_prefs(OTHER_USER, crossserver_opt_in=True, now_ms=NOW)
        assert await adapter.delete_user_prefs(USER) is True
        assert await adapter.delete_user_prefs(USER) is False
        assert await adapter.load_user_prefs(USER) == UserPrefs(user_id=USER)
        assert (await adapter.load_user_prefs(OTHER_USER)).crossserver_opt_in is True

    async def test_server_ids_from_settings_and_server_rows(self, adapter: Any) -> None:
        assert await adapter.server_ids() == []
        await self._put(adapter, server_key(guild=OTHER_GUILD), ())
        await self._put(adapter, server_key(guild=OTHER_GUILD, channel="c9"), ())
        await self._put(adapter, user_key(guild=None), ())  # a DM names no server
        await adapter.update_server_settings(GUILD, {"refresh_cadence": 3}, now_ms=NOW)
        assert await adapter.server_ids() == sorted([GUILD, OTHER_GUILD])

    async def test_count_older_than(self, adapter: Any) -> None:
        for i in range(3):
            await self._put(adapter, server_key(f"c{i}"), (), now=NOW + i)
        assert await adapter.count_older_than(NOW) == 0
        assert await adapter.count_older_than(NOW + 2) == 2
        assert await adapter.count_memories() == 3
