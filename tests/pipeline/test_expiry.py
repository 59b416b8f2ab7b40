"""Expiry: 12 h without a summary, 24 h with one, strictly greater; the same
answer after a restart; the counter outlives the content."""

from __future__ import annotations

from stm_core._util.clock import ManualClock
from stm_core.settings import HOUR_MS, Settings
from stm_core.store import Stm

from .support import (
    ART,
    DUNGEON,
    GENERAL,
    QUEST,
    OpenStm,
    capture,
    make_turn,
    other_text,
    same_text,
    server_key,
    set_settings,
    write,
)


async def three_kinds(stm: Stm) -> None:
    await capture(stm, server_key(GENERAL), ("user", "Bob", "raw only"))
    await write(stm, server_key(ART), summary="has a summary")
    await write(stm, server_key(DUNGEON), categories={"goals": "categories only"})


def shown(text: str | None) -> set[str]:
    return {s for s in ("raw only", "has a summary", "categories only")
            if text is not None and s in text}


async def test_ttls_are_strictly_greater(stm: Stm, clock: ManualClock) -> None:
    start = clock.now_ms()
    await three_kinds(stm)
    clock.set(start + 12 * HOUR_MS)
    assert shown(other_text(await stm.build_context(make_turn()))) == {
        "raw only", "has a summary", "categories only"}
    clock.set(start + 12 * HOUR_MS + 1)
    # Category-only rows use the 12 h TTL, like raw-only ones.
    assert shown(other_text(await stm.build_context(make_turn()))) == {"has a summary"}
    clock.set(start + 24 * HOUR_MS)
    assert shown(other_text(await stm.build_context(make_turn()))) == {"has a summary"}
    clock.set(start + 24 * HOUR_MS + 1)
    assert other_text(await stm.build_context(make_turn())) is None


async def test_ttls_follow_the_settings(open_stm: OpenStm, clock: ManualClock) -> None:
    async with open_stm("memory://", settings=Settings(ttl_hours=1, summary_ttl_hours=2)) as stm:
        await three_kinds(stm)
        clock.advance(hours=1, ms=1)
        assert shown(other_text(await stm.build_context(make_turn()))) == {"has a summary"}
        clock.advance(hours=1)
        assert other_text(await stm.build_context(make_turn())) is None


async def test_expiry_gives_the_same_answer_after_a_restart(
        open_stm: OpenStm, db_url: str, clock: ManualClock) -> None:
    start = clock.now_ms()
    async with open_stm(db_url) as stm:
        await three_kinds(stm)
        await write(stm, server_key(QUEST), summary="our summary")
        answers = []
        for offset in (12 * HOUR_MS, 12 * HOUR_MS + 1, 24 * HOUR_MS + 1):
            clock.set(start + offset)
            answers.append(await stm.build_context(make_turn()))
    async with open_stm(db_url) as stm:
        for offset, before in zip((12 * HOUR_MS, 12 * HOUR_MS + 1, 24 * HOUR_MS + 1),
                                  answers, strict=True):
            clock.set(start + offset)
            assert await stm.build_context(make_turn()) == before
    assert same_text(answers[-1]) is None and other_text(answers[-1]) is None


async def test_an_expired_same_channel_row_shows_nothing_but_still_counts(
        stm: Stm, clock: ManualClock) -> None:
    await set_settings(stm, refresh_cadence=2)
    await write(stm, server_key(QUEST), summary="old news")
    await capture(stm, server_key(QUEST), counter_increment=2)
    clock.advance(hours=24, ms=1)
    ctx = await stm.build_context(make_turn())
    assert same_text(ctx) is None
    assert ctx.nudge_item is not None
