"""Privacy requests: ``forget_user`` removes everything of a user everywhere,
``export_user`` shows it, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging

import pytest

from stm_core import Actor
from stm_core.errors import PermissionDenied, StorageError, ValidationError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.storage.protocol import UserErasure
from stm_core.storage.records import CaptureWrite, MemoryFilter, MemoryKey
from stm_core.store import Stm
from stm_core.testing.conformance import authored

X = "4242"  # the user who asks to be forgotten
Y = "5151"
G, G2 = "900", "901"


def line(author: str, text: str) -> HistoryMessage:
    return HistoryMessage(author_type="user", content=text, speaker_name=f"n{author}",
                          author_id=author)


async def say(stm: Stm, user: str, channel: str, server: str | None,
              *lines: HistoryMessage) -> None:
    turn = Turn(user_id=user, channel_id=channel, server_id=server, persona_id="p",
                has_tools=False)
    result = await stm.record_turn(turn, list(lines), [PersonaResponse(
        content=f"reply in {channel}", persona_name="Bot", persona_id="p")])
    assert result.recorded


async def populate(stm: Stm) -> None:
    """X talks in two servers and a DM; Y's turns carry X's lines into Y's copies."""
    await say(stm, X, "c1", G, line(Y, "y-hello-1"), line(X, "x-secret-1"))
    await say(stm, Y, "c1", G, line(X, "x-secret-1"), line(Y, "y-hello-2"))
    await say(stm, Y, "c9", G2, line(X, "x-secret-2"), line(Y, "y-hello-3"))
    await say(stm, X, "dm-x", None, line(X, "x-secret-dm"))
    await stm.admin.set_user_opt_in(X, opt_in=True)


def everything(texts: list[str]) -> str:
    return "\n".join(texts)


async def build_texts(stm: Stm) -> list[str]:
    """What every build around the world shows: each user in each place."""
    texts = []
    for user in (X, Y):
        for channel, server in (("c1", G), ("c2", G), ("c9", G2), ("c8", G2),
                                ("dm-x", None), ("dm-y", None)):
            ctx = await stm.build_context(Turn(user_id=user, channel_id=channel,
                                               server_id=server, persona_id="p",
                                               has_tools=False))
            texts += [item.text for item in ctx.memory_items]
    return texts


async def stored_lines(stm: Stm) -> list[tuple[str | None, str]]:
    rows = []
    for server in (G, G2, ""):
        rows += await stm.adapter.list_memories(MemoryFilter(server_id=server))
    return [(m.author_id, m.content) for r in rows for m in r.messages]


async def test_forget_removes_every_trace_and_keeps_everyone_else(stm: Stm) -> None:
    await populate(stm)
    before = everything(await build_texts(stm))  # also warms the cache
    assert "x-secret-1" in before and "x-secret-2" in before

    result = await stm.admin.forget_user(X)

    assert {k.user_id for k in result.rows_removed} == {X}
    assert len(result.rows_removed) == 2  # X's copy in G/c1 and the DM row
    assert result.lines_removed == 4  # the server rows of c1 and c9, Y's two copies
    assert result.preferences_removed
    lines = await stored_lines(stm)
    assert not [t for a, t in lines if a == X or t.startswith("x-")]
    # y-hello-1 lived only in X's own copy (the server row has moved on), which went whole.
    assert {t for a, t in lines if a == Y} == {"y-hello-2", "y-hello-3"}
    assert not (await stm.admin.user_opt_in(X)).crossserver_opt_in
    # The warm cache saw every change: no build for anyone shows X's words.
    after = everything(await build_texts(stm))
    assert "x-secret" not in after
    assert "y-hello-3" in after
    assert await stm.adapter.list_memories(MemoryFilter(user_id=X)) == []


async def test_a_dry_run_reports_the_same_and_changes_nothing(stm: Stm) -> None:
    await populate(stm)
    lines_before = await stored_lines(stm)
    preview = await stm.admin.forget_user(X, dry_run=True)
    assert preview.dry_run
    assert await stored_lines(stm) == lines_before
    assert (await stm.admin.user_opt_in(X)).crossserver_opt_in
    done = await stm.admin.forget_user(X)
    assert (set(preview.rows_removed), set(preview.rows_changed), preview.lines_removed,
            preview.preferences_removed) == (set(done.rows_removed), set(done.rows_changed),
                                             done.lines_removed, done.preferences_removed)
    again = await stm.admin.forget_user(X)
    assert (again.rows_removed, again.rows_changed, again.lines_removed,
            again.preferences_removed) == ((), (), 0, False)


async def test_export_holds_every_stored_thing_about_the_user(stm: Stm) -> None:
    await populate(stm)
    exported = await stm.admin.export_user(X)
    json.dumps(exported)  # JSON-able as it is
    assert exported["preferences"] == {"crossserver_opt_in": True}
    own = {(r["key"]["server_id"], r["key"]["channel_id"]) for r in exported["own_rows"]}
    assert own == {(G, "c1"), ("", "dm-x")}
    others = exported["lines_in_other_rows"]
    assert {m["content"] for r in others for m in r["messages"]} == {"x-secret-1",
                                                                      "x-secret-2"}
    assert all(m["author_id"] == X for r in others for m in r["messages"])
    assert len(others) == 4
    await stm.admin.forget_user(X)
    empty = await stm.admin.export_user(X)
    assert (empty["own_rows"], empty["lines_in_other_rows"], empty["preferences"]) == (
        [], [], {"crossserver_opt_in": False})


async def test_rows_written_before_author_ids_keep_working(stm: Stm) -> None:
    """Lines without an author id load, show and survive a forget untouched."""
    key = MemoryKey.server(G, "c3", "p")
    await stm.engine.capture([CaptureWrite(key=key, now_ms=stm.clock.now_ms(),
                                    messages=authored((None, "old line"), (X, "x-new")))])
    await stm.admin.forget_user(X)
    record = await stm.adapter.get_memory(key)
    assert record is not None
    assert [(m.author_id, m.content) for m in record.messages] == [(None, "old line")]


@pytest.mark.parametrize("user_id", ["", None, ["x"], "  ", "x" * 500])
async def test_bad_user_ids_are_refused(stm: Stm, user_id: object) -> None:
    with pytest.raises(ValidationError):
        await stm.admin.forget_user(user_id)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await stm.admin.export_user(user_id)  # type: ignore[arg-type]


async def test_dry_run_must_be_a_bool(stm: Stm) -> None:
    with pytest.raises(ValidationError):
        await stm.admin.forget_user(X, dry_run="yes")  # type: ignore[arg-type]


async def test_only_the_user_may_forget_or_export_themselves(stm: Stm) -> None:
    await populate(stm)
    moderator = Actor(user_id=Y, can_manage=True)
    with pytest.raises(PermissionDenied):
        await stm.admin.forget_user(X, actor=moderator)
    with pytest.raises(PermissionDenied):
        await stm.admin.export_user(X, actor=moderator)
    assert (await stm.admin.export_user(X, actor=Actor(user_id=X)))["own_rows"]
    assert (await stm.admin.forget_user(X, actor=Actor(user_id=X))).rows_removed


async def test_the_built_in_adapters_offer_the_capability(stm: Stm) -> None:
    assert isinstance(stm.adapter, UserErasure)


async def test_a_dry_run_reports_preferences_only_when_some_are_stored(stm: Stm) -> None:
    await populate(stm)
    assert (await stm.admin.forget_user(X, dry_run=True)).preferences_removed
    assert not (await stm.admin.forget_user(Y, dry_run=True)).preferences_removed
    assert not (await stm.admin.forget_user(Y)).preferences_removed


async def test_forget_logs_the_counts_an_operator_audits(
        stm: Stm, caplog: pytest.LogCaptureFixture) -> None:
    """docs/logging.md: ``stm.admin`` logs a user forgotten, rows and lines removed."""
    await populate(stm)
    with caplog.at_level(logging.INFO, logger="stm.admin"):
        await stm.admin.forget_user(X)
        await stm.admin.forget_user(X)
    said = [r.getMessage() for r in caplog.records
            if r.name == "stm.admin" and "forgotten" in r.getMessage()]
    assert said == [
        f"user {X} forgotten: 2 own rows, 4 lines in 4 other rows, preferences removed; "
        "0 memories and 0 lines naming them cleared; "
        "0 lines without an author id in 0 rows of their channels not checked",
        f"user {X} forgotten: 0 own rows, 0 lines in 0 other rows, preferences none stored; "
        "0 memories and 0 lines naming them cleared; "
        "0 lines without an author id in 0 rows of their channels not checked"]


async def test_a_forgotten_users_cached_opt_in_is_gone_too(stm: Stm) -> None:
    await populate(stm)
    assert (await stm.engine.user_view(X)).prefs.crossserver_opt_in  # cached now
    await stm.admin.forget_user(X)
    assert not (await stm.engine.user_view(X)).prefs.crossserver_opt_in


async def test_export_says_which_thread_and_persona_lineage_an_own_row_belongs_to(
        stm: Stm) -> None:
    turn = Turn(user_id=X, channel_id="t1", server_id=G, parent_channel_id="c1",
                persona_id="p", persona_lineage_id="lineage-1", has_tools=False)
    await stm.record_turn(turn, [line(X, "x-in-thread")], [PersonaResponse(
        content="reply", persona_name="Bot", persona_id="p")])
    [own] = (await stm.admin.export_user(X))["own_rows"]
    assert (own["parent_channel_id"], own["persona_lineage_id"]) == ("c1", "lineage-1")


async def test_an_adapter_without_the_capability_is_named_in_the_refusal(stm: Stm) -> None:
    class Plain:
        name = "plain"

    real = stm.adapter
    stm.adapter = Plain()  # type: ignore[assignment]
    try:
        for call in (stm.admin.forget_user(X), stm.admin.export_user(X)):
            with pytest.raises(StorageError) as info:
                await call
            assert str(info.value) == ("the plain storage adapter cannot find or remove a "
                                       "user's lines (it does not implement UserErasure)")
    finally:
        stm.adapter = real
