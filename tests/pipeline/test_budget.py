"""The prompt budget: stored lines are capped, and a turn's block is held to
``prompt_budget_tokens``, degraded in the documented order (DESIGN decision 17)."""

from __future__ import annotations

import attrs
import pytest

from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.engine.profile import ProfileCache
from stm_core.errors import ConfigurationError
from stm_core.models import HistoryMessage, PersonaResponse, StmContext
from stm_core.pipeline.budget import Block, fit_budget
from stm_core.plugin_types import TokenCounter, byte_bounded, is_byte_bounded
from stm_core.settings import RULES, Settings
from stm_core.store import Stm
from stm_core.text.truncation import BUDGET_TRUNCATION_MARK, LINE_TRUNCATION_MARK
from stm_plugins.token_estimate import estimate_tokens

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
    write,
)

#: Other channels, least recently updated first.
CHANNELS = (DUNGEON, GENERAL, ART)
NAMES = {DUNGEON: "dungeon", GENERAL: "general", ART: "art"}


def cost(ctx: StmContext) -> int:
    texts = [i.text for i in ctx.memory_items]
    if ctx.nudge_item is not None:
        texts.append(ctx.nudge_item.text)
    return sum(estimate_tokens(t) for t in texts)


async def seed(stm: Stm, clock: ManualClock) -> None:
    """Three other channels with a summary and six raw lines each, and a long
    same-channel summary that is due for a nudge."""
    for channel in CHANNELS:
        await capture(stm, server_key(channel),
                      *[("user", "Alice", f"{NAMES[channel]} line {i} " + "x" * 400)
                        for i in range(6)])
        await write(stm, server_key(channel), summary=f"{NAMES[channel]} summary " + "y" * 600)
        clock.advance(minutes=1)
    await write(stm, server_key(QUEST), summary="quest summary " + "z" * 1200)
    await capture(stm, server_key(QUEST), counter_increment=5)


async def context_with_budget(stm: Stm, budget: int) -> StmContext:
    """The turn's context under another process-wide budget, on the same data."""
    stm.engine.settings = attrs.evolve(stm.settings, prompt_budget_tokens=budget)
    stm.engine.profiles = ProfileCache(stm.hooks, stm.settings)
    return await stm.build_context(make_turn())


@pytest.fixture
async def seeded(stm: Stm, clock: ManualClock) -> Stm:
    await seed(stm, clock)
    return stm


async def test_no_budget_shows_everything(seeded: Stm) -> None:
    ctx = await context_with_budget(seeded, 0)
    text = other_text(ctx) or ""
    assert all(f"{NAMES[c]} line {i}" in text for c in CHANNELS for i in range(6))
    assert cost(ctx) > 2000  # the default budget would have cut it
    assert cost(await context_with_budget(seeded, 2000)) <= 2000


async def test_degrades_in_the_documented_order(seeded: Stm) -> None:
    full = await context_with_budget(seeded, 0)
    full_same = same_text(full)
    assert full_same is not None and full.nudge_item is not None
    nudge_cost = estimate_tokens(full.nudge_item.text)
    stages: set[str] = set()
    for budget in range(cost(full), 0, -25):
        ctx = await context_with_budget(seeded, budget)
        other, same = other_text(ctx) or "", same_text(ctx)
        assert ctx.nudge_item == full.nudge_item  # never cut
        assert cost(ctx) <= budget or [i.kind for i in ctx.memory_items] == []
        if other:
            # The same-channel memory is whole while any other channel shows.
            assert same == full_same
            shown = [c for c in CHANNELS if f"{NAMES[c]} summary" in other]
            # Channels go least recent first: what is left is the most recent.
            assert shown == list(CHANNELS[len(CHANNELS) - len(shown):])
            if len(shown) < len(CHANNELS):
                assert " line " not in other  # raw lines went before channels
                stages.add("channels")
            elif " line 0 " not in other:
                # Raw lines go oldest first, in every channel alike.
                kept = {c: [i for i in range(6) if f"{NAMES[c]} line {i} " in other]
                        for c in CHANNELS}
                assert all(k == list(range(6 - len(k), 6)) for k in kept.values())
                assert len({len(k) for k in kept.values()}) == 1
                stages.add("raw lines")
        elif same is not None and same != full_same:
            assert same.endswith(BUDGET_TRUNCATION_MARK + "]")
            assert full_same.startswith(same.removesuffix(BUDGET_TRUNCATION_MARK + "]"))
            stages.add("summary cut")
        elif same is None:
            assert budget < nudge_cost + 40
            stages.add("same channel gone")
    assert stages == {"raw lines", "channels", "summary cut", "same channel gone"}


async def test_freshness_follows_the_channels_that_are_shown(
        open_stm: OpenStm, backend_url: str, clock: ManualClock) -> None:
    async with open_stm(backend_url, settings=Settings(prompt_budget_tokens=60)) as stm:
        await write(stm, server_key(ART), summary="a" * 400)
        ctx = await stm.build_context(make_turn(has_tools=False))
    assert ctx.memory_items == ()
    assert ctx.memory_injection_depth == -1


class WordCounter:
    @hookimpl
    def stm_token_counter(self, provider: str) -> object:
        return (lambda text: len(text.split())) if provider == "words" else None


async def test_the_counter_comes_from_the_hook(open_stm: OpenStm, backend_url: str) -> None:
    settings = Settings(prompt_budget_tokens=40)
    async with open_stm(backend_url, settings=settings, plugins=[WordCounter()]) as stm:
        await write(stm, server_key(ART), summary="word " * 20)
        by_words = await stm.build_context(make_turn(provider="words", has_tools=False))
        by_estimate = await stm.build_context(make_turn(has_tools=False))
    # 20 words and a 12-word header fit 40 words, not 40 estimated tokens (48).
    assert other_text(by_words) is not None and other_text(by_estimate) is None


async def test_stored_lines_are_capped_with_a_mark(open_stm: OpenStm, backend_url: str) -> None:
    settings = Settings(max_stored_line_length=100)
    async with open_stm(backend_url, settings=settings) as stm:
        long = "spam " * 40_000  # 200k characters, as a hostile message could be
        turn = make_turn(persona_id="p1")
        await stm.record_window(turn, [HistoryMessage(author_type="user", content=long),
                                       HistoryMessage(author_type="user", content="short")],
                                [PersonaResponse(content="ok " * 100, persona_name="Tomori",
                                                 persona_id="p1")])
        record = await stm.adapter.get_memory(server_key(QUEST, "p1"))
    assert record is not None
    contents = [m.content for m in record.messages]
    assert [len(c) for c in contents] == [100, 5, 100]
    assert contents[0].endswith(LINE_TRUNCATION_MARK) and contents[0].startswith("spam spam")
    assert contents[2].endswith(LINE_TRUNCATION_MARK)


async def test_default_line_cap(stm: Stm) -> None:
    line = "é" * 5000
    await stm.record_window(make_turn(), [HistoryMessage(author_type="user", content=line)],
                            [PersonaResponse(content="ok", persona_name="Tomori")])
    record = await stm.adapter.get_memory(server_key(QUEST))
    assert record is not None
    assert len(record.messages[0].content) == stm.settings.max_stored_line_length == 1000


@pytest.mark.parametrize(("field", "value"), [
    ("prompt_budget_tokens", -1), ("max_stored_line_length", 39),
    ("max_stored_line_length", 0), ("max_stored_line_length", -5),
])
def test_out_of_range_settings_are_refused(field: str, value: int) -> None:
    with pytest.raises(ConfigurationError, match=RULES[field].var):
        attrs.evolve(Settings(), **{field: value})


@pytest.mark.parametrize(("var", "raw"), [
    ("STM_PROMPT_BUDGET_TOKENS", "-3"), ("STM_PROMPT_BUDGET_TOKENS", "lots"),
    ("STM_MAX_STORED_LINE_LENGTH", "10"), ("STM_MAX_STORED_LINE_LENGTH", "1.5"),
])
def test_bad_environment_values_name_the_variable(var: str, raw: str) -> None:
    with pytest.raises(ConfigurationError, match=var.lower().removeprefix("stm_") + "|" + var):
        Settings.from_env({var: raw})


def test_environment_values() -> None:
    settings = Settings.from_env({"STM_PROMPT_BUDGET_TOKENS": "0",
                                  "STM_MAX_STORED_LINE_LENGTH": "4000"})
    assert (settings.prompt_budget_tokens, settings.max_stored_line_length) == (0, 4000)


async def test_a_servers_budget_beats_the_process_setting(seeded: Stm) -> None:
    await context_with_budget(seeded, 0)  # the process has no budget
    params = await seeded.admin.set_server_params("G", prompt_budget_tokens=300)
    assert (params.prompt_budget_tokens, params.labels["prompt_budget_tokens"]) == (
        300, "300 tokens")
    assert cost(await seeded.build_context(make_turn())) <= 300
    # 0 switches this server's budget off, whatever the process setting says.
    seeded.engine.settings = attrs.evolve(seeded.settings, prompt_budget_tokens=100)
    seeded.engine.profiles = ProfileCache(seeded.hooks, seeded.settings)
    await seeded.admin.set_server_params("G", prompt_budget_tokens=0)
    assert cost(await seeded.build_context(make_turn())) > 2000
    reset = await seeded.admin.reset_server_params("G", names=["prompt_budget_tokens"])
    assert reset.prompt_budget_tokens == 100 and "prompt_budget_tokens" in reset.defaults
    assert cost(await seeded.build_context(make_turn())) <= 100


def test_without_a_budget_nothing_is_counted() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    block = fit_budget(0, count, nudge="refresh", entries=2, raw_lines=3,
                       render_other=lambda kept, raw: (f"{kept} channels, {raw} lines", 7),
                       same_body="goals", render_same=lambda body: f"[{body}]")
    assert (block.other, block.same, block.newest_other_ms) == ("2 channels, 3 lines",
                                                                 "[goals]", 7)
    assert counted == []
    # With a budget the same block is counted, and kept whole when it fits.
    assert fit_budget(1000, count, nudge="refresh", entries=2, raw_lines=3,
                      render_other=lambda kept, raw: (f"{kept} channels, {raw} lines", 7),
                      same_body="goals", render_same=lambda body: f"[{body}]") == block
    assert counted


def fit_texts(budget: int, count: TokenCounter, *, other: str, same: str = "goals",
              nudge: str = "refresh") -> Block:
    return fit_budget(budget, count, nudge=nudge, entries=1, raw_lines=0,
                      render_other=lambda kept, raw: (other if kept else None, 7),
                      same_body=same, render_same=lambda body: body)


def test_a_byte_bounded_counter_counts_nothing_when_the_length_proves_the_fit() -> None:
    counted: list[str] = []

    @byte_bounded
    def count(text: str) -> int:
        counted.append(text)
        return len(text.encode())

    # 14 + 5 + 7 bytes: at most 26 tokens, so a budget of 26 needs no count.
    block = fit_texts(26, count, other="other channels")
    assert (block.other, block.same) == ("other channels", "goals") and counted == []
    # One byte over: counted, and kept since the real count fits.
    assert fit_texts(25, lambda t: len(t) // 4, other="other channels") == block
    assert fit_texts(25, count, other="other channels").other is None
    assert counted


def test_non_ascii_text_is_bounded_by_four_bytes_a_character() -> None:
    counted: list[str] = []

    @byte_bounded
    def count(text: str) -> int:
        counted.append(text)
        return len(text.encode())

    # "é" is one character but two bytes: a character bound would wrongly skip.
    fit_texts(3 * 9, count, other="ééééééééé", same="", nudge="")
    assert counted
    counted.clear()
    fit_texts(4 * 9, count, other="ééééééééé", same="", nudge="")
    assert counted == []


def test_an_unmarked_counter_is_always_called() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return 0

    fit_texts(10_000, count, other="other channels")
    assert counted


def test_the_built_in_counters_are_byte_bounded() -> None:
    assert is_byte_bounded(estimate_tokens)
    for text in ("plain words", "éàü", "漢字かな", "🙂🙂", ""):
        assert estimate_tokens(text) <= len(text.encode())


def test_the_same_channel_memory_is_cut_to_the_longest_start_that_fits() -> None:
    """One token per character: the cut keeps exactly as much as the budget allows,
    at every budget (the rendering adds two characters; from one kept character
    up to all but one)."""
    body = "abcdefghij" * 10
    for budget in range(len(BUDGET_TRUNCATION_MARK) + 3, len(body) + 2):
        block = fit_budget(budget, len, nudge=None, render_other=lambda n, r: (None, None),
                           entries=0, raw_lines=0, same_body=body,
                           render_same=lambda b: f"<{b}>")
        kept = budget - 2 - len(BUDGET_TRUNCATION_MARK)
        assert block.same == "<" + body[:kept] + BUDGET_TRUNCATION_MARK + ">", budget


def test_nothing_of_the_same_channel_memory_is_shown_when_only_the_mark_would_fit() -> None:
    block = fit_budget(len(BUDGET_TRUNCATION_MARK) + 2, len, nudge=None,
                       render_other=lambda n, r: (None, None), entries=0, raw_lines=0,
                       same_body="abcdefghij" * 10, render_same=lambda b: f"<{b}>")
    assert block.same is None
