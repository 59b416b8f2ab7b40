"""Rendered rows are remembered across turns, and never shown stale.

A warm build reuses what a cached row rendered to; each test changes one input
the text depends on (the row, the plugins, the clock, the turn's names or
persona, the server's configuration) and checks the next build shows it.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable

import attrs

from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.pipeline.render_memo import MAX_ENTRIES, new_render_memo, recall, remember
from stm_core.pipeline.render_other import render_other_channels
from stm_core.pipeline.same_channel import wrap_same_channel
from stm_core.plugin_types import OtherChannelParts, RenderMode
from stm_core.storage.records import MemoryKey, MemoryRecord
from stm_core.store import Stm
from stm_core.text import memo as text_memo
from tests.retained import retained_bytes

from .support import (
    ART,
    GENERAL,
    QUEST,
    capture,
    make_turn,
    other_text,
    same_text,
    server_key,
    set_categories,
    set_settings,
    user_key,
    write,
)


async def test_a_new_revision_of_a_row_shows_its_new_summary(stm: Stm) -> None:
    await write(stm, server_key(ART), summary="Painting a mural.")
    assert "Painting a mural." in (other_text(await stm.build_context(make_turn())) or "")
    await write(stm, server_key(ART), summary="The mural is finished.")
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "The mural is finished." in text and "Painting a mural." not in text


async def test_a_new_revision_of_the_live_row_shows_its_new_body(stm: Stm) -> None:
    await write(stm, server_key(QUEST), summary="Looking for the key.")
    assert "Looking for the key." in (same_text(await stm.build_context(make_turn())) or "")
    await write(stm, server_key(QUEST), summary="The key is found.")
    assert same_text(await stm.build_context(make_turn())) == (
        "[System: Tomori's short term memory for this ongoing conversation:\n"
        "The key is found.]")


async def test_the_age_label_moves_with_the_clock(stm: Stm, clock: ManualClock) -> None:
    await write(stm, server_key(ART), summary="Mural.")
    assert "(just now)" in (other_text(await stm.build_context(make_turn())) or "")
    clock.advance(minutes=125)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "(2 hours ago)" in text and "(just now)" not in text


async def test_each_turn_gets_its_own_persona_user_and_channel_names(stm: Stm) -> None:
    await capture(stm, server_key(ART), ("model", None, "hi!"), ("user", None, "hello?"))
    await write(stm, server_key(ART), summary="Mural.")
    first = other_text(await stm.build_context(make_turn()))
    assert first is not None and "Tomori remembers" in first and 'Tomori: "hi!"' in first
    text = other_text(await stm.build_context(make_turn(
        bot_name="Kaori", triggerer_name="Bob", channel_names={ART: "gallery"})))
    assert text is not None
    assert "Kaori remembers a recent conversation in the channel named `gallery`" in text
    assert 'Kaori: "hi!"' in text and "Tomori" not in text and "`art`" not in text
    impersonated = other_text(await stm.build_context(make_turn(is_user_impersonation=True)))
    assert impersonated is not None
    assert impersonated.startswith("[System: Recent conversation in the channel named `art`")


async def test_user_scope_rows_name_the_turns_own_user(stm: Stm) -> None:
    dm = {"server_id": None, "channel_id": "dm-1"}
    await write(stm, user_key("dm-2"), summary="Talked about cats.")
    alice = other_text(await stm.build_context(make_turn(**dm)))
    carol = other_text(await stm.build_context(make_turn(**dm, triggerer_name="Carol")))
    assert alice is not None and carol is not None
    assert "conversation with Alice" in alice and "conversation with Carol" in carol


async def test_new_server_settings_change_the_raw_lines_and_labels(stm: Stm) -> None:
    await capture(stm, server_key(GENERAL), *[("user", "Bob", f"line {i}") for i in range(8)])
    await set_categories(stm, ["Goals", "Mood"])
    await write(stm, server_key(QUEST), categories={"goals": "Find the key", "mood": "Calm"})
    ctx = await stm.build_context(make_turn())
    assert (other_text(ctx) or "").count('Bob: "line') == 6
    assert "Goals: Find the key" in (same_text(ctx) or "")
    await set_settings(stm, crude_message_count=2)
    await set_categories(stm, ["Goals", "Mood"][::-1])
    ctx = await stm.build_context(make_turn())
    assert (other_text(ctx) or "").count('Bob: "line') == 2
    assert (same_text(ctx) or "").endswith("Mood: Calm\nGoals: Find the key]")


@attrs.frozen
class HouseStyle:
    """A third-party render mode under a fixed key; ``mark`` tells versions apart."""

    mark: str

    @hookimpl
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        mark = self.mark

        def render(parts: OtherChannelParts) -> str:
            return f"[{mark} {parts.body}]\n\n" if parts.body else ""
        return [RenderMode(key="house", render=render)]


async def test_a_new_plugin_set_renders_with_the_new_plugins(stm: Stm) -> None:
    stm.pm.register(HouseStyle("v1"), name="house")
    await set_settings(stm, render_mode="house")
    await write(stm, server_key(ART), summary="Mural.")
    assert other_text(await stm.build_context(make_turn())) == "[v1 Mural.]"
    stm.pm.unregister(name="house")
    stm.pm.register(HouseStyle("v2"), name="house")
    assert other_text(await stm.build_context(make_turn())) == "[v2 Mural.]"


def _row(n: int, summary: str = "") -> MemoryRecord:
    return MemoryRecord(key=MemoryKey.server("9", str(n), None), summary=summary or None)


def test_the_memo_starts_over_at_its_bound() -> None:
    memo = new_render_memo()
    rows = [_row(n) for n in range(MAX_ENTRIES)]
    for n, row in enumerate(rows):
        remember(memo, (n,), f"text {n}", row)
    assert len(memo) == MAX_ENTRIES
    last = _row(-1)
    remember(memo, ("one more",), "text", last)
    assert list(memo) == [("one more",)]
    assert recall(memo, ("one more",), last) == ("text", memo[("one more",)][1])


def test_the_memo_keeps_no_row_alive_and_a_new_row_is_never_taken_for_a_dead_one() -> None:
    memo = new_render_memo()
    row = _row(1, "old")
    remember(memo, (id(row),), "[old]", row)
    gone = weakref.ref(row)
    del row
    gc.collect()
    assert gone() is None
    # Whatever object takes the id now, the entry answers for nobody.
    newcomer = _row(1, "new")
    assert recall(memo, (id(newcomer),), newcomer) is None


def test_long_renderings_do_not_pin_memory() -> None:
    # 300 rows of 100,000-character summaries (the budget off): 30 MB of
    # renderings if kept, and as much again in the rows.
    memo = new_render_memo()

    def render_many() -> None:
        for n in range(300):
            summary = f"{n:03}" + "x" * 100_000
            row = _row(n, summary)
            remember(memo, (n,), f"[{summary}]", row)

    held = retained_bytes(render_many)
    assert held < 3 * text_memo.MAX_CHARS, held
    assert 0 < len(memo) < 300


async def test_the_same_rendered_rows_join_into_the_very_same_text(
        stm: Stm, clock: ManualClock) -> None:
    # The mention converters look a text up in their memos: the same object
    # costs them no hash and no comparison of its whole length.
    await write(stm, server_key(ART), summary="Mural.")
    await write(stm, server_key(GENERAL), summary="Chat.")

    async def rendered() -> str:
        turn = make_turn()
        assert turn.server_id is not None
        profile = await stm.engine.profile_for(turn.server_id)
        rows = [r for r in (await stm.engine.server_memories(turn.server_id)).newest_first()
                if r.key.channel_id != turn.channel_id]
        text, _ = render_other_channels(turn, profile, rows, clock.now_ms(),
                                        lambda origin: profile.slug_map, memo=memo)
        assert text == render_other_channels(turn, profile, rows, clock.now_ms(),
                                             lambda origin: profile.slug_map)[0]
        return text

    memo = new_render_memo()
    first = await rendered()
    assert "Mural." in first and "Chat." in first
    assert await rendered() is first
    # A row that changed: a new text, never the one joined before.
    await write(stm, server_key(ART), summary="The mural is finished.")
    changed = await rendered()
    assert "The mural is finished." in changed and "Chat." in changed
    assert "Mural." not in changed


def test_the_same_channel_block_is_made_again_only_when_its_inputs_change() -> None:
    body = "Quest: find the key."
    block = wrap_same_channel(make_turn(), body)
    assert block == ("[System: Tomori's short term memory for this ongoing conversation:\n"
                     "Quest: find the key.]")
    assert wrap_same_channel(make_turn(), "Quest: find the key.") is block
    # Each input the block shows makes a new one.
    assert wrap_same_channel(make_turn(bot_name="Kaori"), body).startswith(
        "[System: Kaori's short term memory")
    assert wrap_same_channel(make_turn(is_user_impersonation=True), body) == (
        "[System: Short term memory for this ongoing conversation:\nQuest: find the key.]")
    assert wrap_same_channel(make_turn(), "Quest: done.").endswith("\nQuest: done.]")
    assert wrap_same_channel(make_turn(), body) == block


async def test_a_channel_that_becomes_a_thread_or_shares_its_name_is_labelled_anew(
        stm: Stm) -> None:
    await write(stm, server_key(ART), summary="Mural.")
    assert "in the channel named `art` (" in (other_text(await stm.build_context(
        make_turn())) or "")
    assert "in the thread named `art` (" in (other_text(await stm.build_context(
        make_turn(thread_ids={ART}))) or "")
    shared = other_text(await stm.build_context(make_turn(
        channel_names={ART: "art", GENERAL: "art", QUEST: "quest"})))
    assert shared is not None and f"in the channel named `art` (ID: {ART}) (" in shared
    assert "in the channel named `art` (" in (other_text(await stm.build_context(
        make_turn())) or "")
