"""Summary history with undo: who wrote each revision, diffs, undo and restore,
limits on every path, and revisions leaving with their row."""

from __future__ import annotations

import logging

import attrs
import pytest

from stm_core._util.clock import ManualClock
from stm_core.errors import ConfigurationError, PermissionDenied, ValidationError
from stm_core.models import Turn
from stm_core.plugin_types import Actor
from stm_core.settings import Settings
from stm_core.storage.records import CaptureWrite, MemoryKey
from stm_core.store import Stm
from stm_core.testing.conformance import authored

from .helpers import seed_summary

SERVER, CHANNEL, PERSONA = "g1", "c1", "p1"
KEY = MemoryKey.server(SERVER, CHANNEL, PERSONA)
WHERE = {"server_id": SERVER, "channel_id": CHANNEL, "persona_id": PERSONA}
ADMIN = Actor(user_id="mod", can_manage=True)


def _turn(user: str = "alice") -> Turn:
    return Turn(user_id=user, channel_id=CHANNEL, server_id=SERVER, persona_id=PERSONA)


async def _model_writes(stm: Stm, text: str) -> None:
    result = await stm.apply_tool_call(_turn(), {"summary": text})
    assert result.ok, result.message


async def test_each_write_is_a_revision_with_its_author(stm: Stm) -> None:
    await _model_writes(stm, "The party found the crypt.")
    await stm.admin.edit_memory(**WHERE, summary="The party found the crypt and a key.",
                                actor=ADMIN)
    history = await stm.admin.memory_history(**WHERE)
    assert [(r.author, r.actor) for r in history.revisions] == [("admin", "mod"),
                                                                ("model", None)]
    newest, older = history.revisions
    assert newest.is_current and not older.is_current
    assert newest.diff == ()
    assert "-The party found the crypt and a key." in older.diff
    assert "+The party found the crypt." in older.diff
    assert older.written_at_ms <= newest.written_at_ms
    assert history.to_dict()["revisions"][0]["author"] == "admin"


async def test_a_bad_rewrite_is_undone_and_the_undo_is_a_revision(
        stm: Stm, clock: ManualClock) -> None:
    await _model_writes(stm, "Goals: find the bell. Alice has 12 HP.")
    clock.advance(minutes=1)
    await _model_writes(stm, "stuff happened")  # the degraded rewrite
    undone = await stm.admin.undo_memory(**WHERE, actor=ADMIN)
    assert undone.snapshot.text == "Goals: find the bell. Alice has 12 HP."
    record = await stm.adapter.get_memory(KEY)
    assert record is not None and record.summary == "Goals: find the bell. Alice has 12 HP."
    # What the next turn injects is the restored text (the cache was updated).
    ctx = await stm.build_context(_turn())
    assert "Alice has 12 HP" in repr(ctx) and "stuff happened" not in repr(ctx)
    history = await stm.admin.memory_history(**WHERE)
    assert history.revisions[0].restored_from == undone.restored_from
    assert history.revisions[0].rev == undone.rev == record.rev
    # Undo again goes back to the bad rewrite (undo of the undo), by revision number too.
    bad_rev = history.revisions[1].rev
    restored = await stm.admin.restore_memory(**WHERE, rev=bad_rev)
    assert restored.snapshot.text == "stuff happened"


async def test_limits_hold_on_every_path(open_stm: object, backend_url: str) -> None:
    settings = attrs.evolve(Settings(), memory_history_revisions=2)
    async with open_stm(backend_url, settings=settings) as stm:  # type: ignore[operator]
        for i in range(4):
            await _model_writes(stm, f"model {i}")
            await stm.admin.edit_memory(**WHERE, summary=f"admin {i}")
        await stm.admin.undo_memory(**WHERE)
        history = await stm.admin.memory_history(**WHERE)
        assert len(history.revisions) == 3 and history.limit == 2
        revs = [r.rev for r in history.revisions]
        assert revs == sorted(revs, reverse=True)
        # The triggering user's own copy keeps its history within the limit too.
        user_rows = await stm.adapter.list_revisions(  # type: ignore[attr-defined]
            MemoryKey.user("alice", CHANNEL, PERSONA, SERVER))
        assert len(user_rows) == 3


async def test_history_off_keeps_nothing(open_stm: object) -> None:
    settings = attrs.evolve(Settings(), memory_history_revisions=0)
    async with open_stm("memory://", settings=settings) as stm:  # type: ignore[operator]
        await _model_writes(stm, "one")
        assert (await stm.admin.memory_history(**WHERE)).revisions == ()
        with pytest.raises(ValidationError, match="nothing to undo"):
            await stm.admin.undo_memory(**WHERE)


async def test_deleting_a_row_deletes_its_history(stm: Stm, clock: ManualClock) -> None:
    await _model_writes(stm, "first")
    await _model_writes(stm, "second")
    user_key = MemoryKey.user("alice", CHANNEL, PERSONA, SERVER)
    adapter = stm.adapter
    assert len(await adapter.list_revisions(user_key)) == 2  # type: ignore[attr-defined]
    await stm.admin.clear_user("alice")
    assert await adapter.list_revisions(user_key) == []  # type: ignore[attr-defined]
    await stm.admin.clear_channel(CHANNEL)
    assert await adapter.list_revisions(KEY) == []  # type: ignore[attr-defined]
    # A row written again starts a fresh history.
    await _model_writes(stm, "again")
    assert len(await adapter.list_revisions(KEY)) == 1  # type: ignore[attr-defined]
    # The janitor purges old rows with their history.
    clock.advance(ms=stm.settings.retention_ms + 1)
    assert await stm.janitor.run_once() >= 1
    assert await adapter.list_revisions(KEY) == []  # type: ignore[attr-defined]
    assert await adapter.count_memories() == 0


async def test_an_import_or_category_change_that_clears_memories_takes_history_too(
        stm: Stm) -> None:
    """The configuration import writes no memory content, so it adds no
    revision; when it clears the server's memories their history goes too."""
    await _model_writes(stm, "first")
    await _model_writes(stm, "second")
    adapter = stm.adapter
    exported = await stm.admin.export_config(SERVER)
    exported["params"]["refresh_cadence"] = 3
    await stm.admin.import_config(SERVER, exported)  # same categories: memories kept
    assert len(await adapter.list_revisions(KEY)) == 2  # type: ignore[attr-defined]
    exported["categories"] = [{"label": "Goals", "description": "what the party wants"}]
    await stm.admin.import_config(SERVER, exported)
    assert await adapter.list_revisions(KEY) == []  # type: ignore[attr-defined]
    assert await adapter.get_memory(KEY) is None
    result = await stm.apply_tool_call(_turn(), {"goals": "find the bell"})
    assert result.ok, result.message
    assert len(await adapter.list_revisions(KEY)) == 1  # type: ignore[attr-defined]
    await stm.admin.set_categories(SERVER, ["Threats: what hunts the party"])
    assert await adapter.list_revisions(KEY) == []  # type: ignore[attr-defined]


async def test_restore_of_an_unknown_or_bad_revision_is_refused(stm: Stm) -> None:
    await _model_writes(stm, "only one")
    for bad in (999, -1, 0):
        with pytest.raises(ValidationError, match="not kept") as info:
            await stm.admin.restore_memory(**WHERE, rev=bad)
        assert info.value.field == "rev"
    for wrong in ("1", 1.0, True, None, [1]):
        with pytest.raises(ValidationError) as info:
            await stm.admin.restore_memory(**WHERE, rev=wrong)  # type: ignore[arg-type]
        assert info.value.field == "rev"
    with pytest.raises(ValidationError, match="nothing to undo"):
        await stm.admin.undo_memory(**WHERE)
    with pytest.raises(ValidationError):
        await stm.admin.memory_history(server_id=SERVER, channel_id="", persona_id=PERSONA)


async def test_undo_and_history_are_permission_checked_like_edits(stm: Stm) -> None:
    await _model_writes(stm, "one")
    await _model_writes(stm, "two")
    member = Actor(user_id="bob", can_manage=False)
    assert (await stm.admin.memory_history(**WHERE, actor=member)).revisions
    with pytest.raises(PermissionDenied):
        await stm.admin.undo_memory(**WHERE, actor=member)
    with pytest.raises(PermissionDenied):
        await stm.admin.restore_memory(**WHERE, rev=1, actor=member)
    assert (await stm.adapter.get_memory(KEY)).summary == "two"  # type: ignore[union-attr]
    dm = {"channel_id": "dm1", "user_id": "alice", "persona_id": PERSONA}
    with pytest.raises(PermissionDenied):
        await stm.admin.memory_history(**dm, actor=member)
    with pytest.raises(PermissionDenied):
        await stm.admin.undo_memory(**dm, actor=ADMIN)


async def test_an_adapter_without_history_says_so(stm: Stm) -> None:
    class Plain:
        name = "plain"

    stm_adapter = stm.adapter
    stm.adapter = Plain()  # type: ignore[assignment]
    try:
        with pytest.raises(ConfigurationError, match="keeps no memory history"):
            await stm.admin.memory_history(**WHERE)
    finally:
        stm.adapter = stm_adapter


@pytest.mark.parametrize("value", [-1, 101, True, "5", 2.5])
def test_the_history_setting_is_range_checked(value: object) -> None:
    with pytest.raises(ConfigurationError, match="STM_MEMORY_HISTORY_REVISIONS"):
        Settings(memory_history_revisions=value)  # type: ignore[arg-type]


def test_the_history_setting_from_the_environment() -> None:
    assert Settings.from_env({"STM_MEMORY_HISTORY_REVISIONS": "0"}).memory_history_revisions == 0
    assert Settings.from_env({}).memory_history_revisions == 10
    for bad in ("abc", "101", "-3"):
        with pytest.raises(ConfigurationError):
            Settings.from_env({"STM_MEMORY_HISTORY_REVISIONS": bad})


async def test_seeded_rows_without_a_note_keep_no_history(stm: Stm) -> None:
    await seed_summary(stm, KEY, "written by the host directly")
    assert (await stm.admin.memory_history(**WHERE)).revisions == ()


async def test_an_adapter_without_history_is_named_by_its_name_or_else_its_class(
        stm: Stm) -> None:
    class Plain:
        name = "plain"

    class Nameless:
        pass

    real = stm.adapter
    try:
        for adapter, shown in ((Plain(), "plain"), (Nameless(), "Nameless")):
            stm.adapter = adapter  # type: ignore[assignment]
            with pytest.raises(ConfigurationError) as info:
                await stm.admin.memory_history(**WHERE)
            assert str(info.value) == (f"the {shown} storage adapter keeps no memory history "
                                       "(it lacks the optional MemoryHistory capability)")
    finally:
        stm.adapter = real


async def test_the_diff_shows_each_line_exactly_as_stored(stm: Stm) -> None:
    """Trailing spaces and letters stay in the diff (only line ends go)."""
    await _model_writes(stm, "Loot: 3 gold  \nBoss: Mr X")
    await _model_writes(stm, "Loot: none")
    older = (await stm.admin.memory_history(**WHERE)).revisions[1]
    assert older.diff[-3:] == ("-Loot: none", "+Loot: 3 gold  ", "+Boss: Mr X")


async def test_a_memory_never_written_has_an_empty_history_and_nothing_to_undo(
        stm: Stm) -> None:
    view = await stm.admin.memory_history(**WHERE)
    assert (view.current_text, view.revisions) == ("", ())
    with pytest.raises(ValidationError) as info:
        await stm.admin.undo_memory(**WHERE)
    assert (str(info.value), info.value.field, info.value.allowed) == (
        "nothing to undo: no kept revision differs from the current memory", "rev",
        "a memory with an earlier revision")
    with pytest.raises(ValidationError) as info:
        await stm.admin.restore_memory(**WHERE, rev=1)
    assert (str(info.value), info.value.allowed) == (
        "revision 1 is not kept for this memory (kept: none)", "none")


async def test_an_unknown_revision_is_refused_with_the_kept_ones(stm: Stm) -> None:
    await _model_writes(stm, "one")
    await _model_writes(stm, "two")
    newest, older = (await stm.admin.memory_history(**WHERE)).revisions
    kept = f"{newest.rev}, {older.rev}"
    with pytest.raises(ValidationError) as info:
        await stm.admin.restore_memory(**WHERE, rev=999)
    assert (str(info.value), info.value.field, info.value.allowed) == (
        f"revision 999 is not kept for this memory (kept: {kept})", "rev", kept)


async def test_a_restore_is_a_revision_by_the_admin_who_made_it(stm: Stm) -> None:
    await _model_writes(stm, "one")
    await _model_writes(stm, "two")
    await stm.admin.undo_memory(**WHERE, actor=ADMIN)
    newest = (await stm.admin.memory_history(**WHERE)).revisions[0]
    assert (newest.author, newest.actor) == ("admin", "mod")
    await stm.admin.restore_memory(**WHERE, rev=newest.rev - 1,
                                   actor=Actor(user_id="mod2", can_manage=True))
    newest = (await stm.admin.memory_history(**WHERE)).revisions[0]
    assert (newest.author, newest.actor) == ("admin", "mod2")
    await stm.admin.undo_memory(**WHERE)
    assert (await stm.admin.memory_history(**WHERE)).revisions[0].actor is None


async def test_a_restore_reports_the_memory_as_the_view_shows_it(stm: Stm) -> None:
    await stm.admin.set_categories(SERVER, ["Goals: what the party wants"])
    await stm.admin.edit_memory(**WHERE, categories={"goals": "find the bell"})
    await stm.admin.edit_memory(**WHERE, categories={"goals": "ring it"})
    restored = await stm.admin.undo_memory(**WHERE)
    assert restored.snapshot == await stm.admin.view_memory(**WHERE)
    assert restored.snapshot.mode == "category"


async def test_a_restore_is_logged_with_the_memory_and_revision(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    await _model_writes(stm, "one")
    await _model_writes(stm, "two")
    with caplog.at_level(logging.INFO, logger="stm.admin"):
        restored = await stm.admin.undo_memory(**WHERE)
    assert [r.getMessage() for r in caplog.records if r.name == "stm.admin"] == [
        f"memory of {KEY} restored to revision {restored.restored_from}"]


async def test_a_restore_of_an_expired_memory_does_not_revive_its_old_lines(
        open_stm: object, backend_url: str, clock: ManualClock) -> None:
    """An expired row's lines are dropped by the restore, as by any write, with
    the store's TTLs: the summary TTL for a row with a summary, else the crude one."""
    settings = attrs.evolve(Settings(), ttl_hours=1, summary_ttl_hours=2)
    summary_row = {**WHERE, "channel_id": "c-summary"}
    category_row = {**WHERE, "server_id": "g2", "channel_id": "c-categories"}
    async with open_stm(backend_url, settings=settings) as stm:  # type: ignore[operator]
        await stm.admin.set_categories("g2", ["Goals: what the party wants"])
        for where, first, second in ((summary_row, {"summary": "one"}, {"summary": "two"}),
                                     (category_row, {"categories": {"goals": "one"}},
                                      {"categories": {"goals": "two"}})):
            await stm.admin.edit_memory(**where, **first)
            await stm.admin.edit_memory(**where, **second)
            await stm.engine.capture([CaptureWrite(
                key=MemoryKey.server(where["server_id"], where["channel_id"], PERSONA),
                now_ms=clock.now_ms(), messages=authored(("u1", "an old line")))])
        clock.advance(hours=3)
        for where in (summary_row, category_row):
            restored = await stm.admin.undo_memory(**where)
            assert restored.snapshot.messages == ()
            assert (await stm.admin.view_memory(**where)).messages == ()
