"""A warm build answers as a cold one: one body, whatever the cache holds.

Every turn runs the same stages; what differs between a long-lived store and
one just opened is what the cache holds (views, the rows a bounded view let
go, the keys known to have no row, the render memo, the plugin set's plan).
Over generated servers (settings, private channels, categories, budgets,
cache policies, rows of the server, of DMs and the user's own copies, at the
TTL edges, bounded views, the cross-server opt-in) and turns (server channels
and DMs, channels with and without rows, threads, personas, names, providers
without tools, impersonation), the build of a long-lived store, asked again
with fresh ``Turn`` objects, must equal the build of a store freshly opened
on the same SQLite file at the same clock time, with views that keep every
row (so a row a bounded view let go must still be found).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.models import StmContext
from stm_core.pipeline.load import warm_load
from stm_core.pipeline.plan import MAX_PROVIDERS, PLAN, make_plan
from stm_core.pipeline.recent import cached_visible, newest_visible
from stm_core.plugin_types import MentionConverter, VisibilityPolicy
from stm_core.settings import Settings
from stm_core.store import Stm, open_store
from stm_plugins.token_estimate import estimate_tokens

from .support import (
    GUILD,
    OpenStm,
    capture,
    make_turn,
    server_key,
    set_categories,
    set_opt_in,
    set_settings,
    user_key,
    write,
)

NOW = 1_767_225_600_000
HOUR = 3_600_000
CHANNELS = ("c1", "c2", "c3", "c4", "c5", "c6")
#: Ages around the fresh window (1 h) and both TTLs (12 h, 24 h), and between.
AGES = (st.sampled_from([0, 1, 59 * 60_000, HOUR, HOUR + 1, 12 * HOUR, 12 * HOUR + 1,
                        24 * HOUR, 24 * HOUR + 1, 5 * HOUR]) | st.integers(0, 30 * HOUR)
        | st.integers(0, 2 * HOUR))

ROW = st.fixed_dictionaries({
    # The server's row, a DM's row, or the user's own copy of a server row.
    "scope": st.sampled_from(["server", "server", "dm", "dm", "copy"]),
    "channel": st.sampled_from(CHANNELS),
    "persona": st.sampled_from([None, "p1"]),
    "lineage": st.sampled_from([None, "L1", "L2"]),
    "parent": st.sampled_from([None, "c1", "c6"]),
    "lines": st.lists(st.sampled_from(["hi <#c2>", "yo {user}", "@everyone look", "ok"]),
                      max_size=3),
    "counter": st.integers(0, 3),
    "summary": st.sampled_from([None, "", "a plan with <@u2>", "quiet"]),
    "categories": st.none() | st.dictionaries(st.sampled_from(["mood", "plan", "summary",
                                                               "gone"]),
                                              st.sampled_from(["", " ", "calm", "go"]),
                                              max_size=3),
    "age": AGES,
})

SERVER = st.fixed_dictionaries({
    "private": st.sets(st.sampled_from(CHANNELS), max_size=2),
    "bypass": st.booleans(),
    "render_mode": st.sampled_from([None, "crude_summary", "supersede"]),
    "cache_policy": st.sampled_from([None, "freshness", "stable"]),
    "labels": st.sampled_from([None, ("summary",), ("Mood", "Plan"), ("Plan",)]),
    "cadence": st.sampled_from([None, 1, 2, 3]),
    "crude": st.sampled_from([None, 1, 2]),
    "budget": st.sampled_from([None, 0, 12, 60, 400, 5000]),
    "content_depth": st.sampled_from([None, -1, 0, 3]),
    "nudge_depth": st.sampled_from([None, 0, 2]),
    "stm_enabled": st.sampled_from([None, True, False]),
})

TURN = st.fixed_dictionaries({
    "server_id": st.sampled_from([GUILD, GUILD, None]),
    "channel_id": st.sampled_from((*CHANNELS, "fresh")),
    "persona_id": st.sampled_from([None, "p1"]),
    "persona_lineage_id": st.sampled_from([None, "", "L1", "L2"]),
    "parent_channel_id": st.sampled_from([None, "c1", "c6"]),
    "has_tools": st.booleans(),
    "is_user_impersonation": st.booleans(),
    "explicit_long_term_intent": st.booleans(),
    "provider": st.sampled_from(["openai", "anthropic", "novelai"]),
    "channel_names": st.dictionaries(st.sampled_from(CHANNELS),
                                     st.sampled_from(["general", "art", "quest"]), max_size=4),
    "thread_ids": st.sets(st.sampled_from(CHANNELS), max_size=2),
    "user_names": st.sampled_from([{}, {"u2": "Bea"}]),
})

ENV = st.fixed_dictionaries({
    "max_other_channels": st.integers(0, 4),
    "cache_max_rows_per_view": st.sampled_from([1, 2, 3, 1000]),
    "prompt_budget_tokens": st.sampled_from([0, 40, 2000]),
    # Past 12 h, a window in which the TTL of a row without a summary matters.
    "fresh_window_minutes": st.sampled_from([60.0, 60.0, 1000.0, 1500.0]),
})


async def seed(stm: Stm, clock: ManualClock, server: dict[str, Any],
               rows: list[dict[str, Any]], opt_in: bool) -> None:
    labels = server["labels"]
    await set_settings(
        stm, private_channel_ids=frozenset(server["private"]),
        privacy_bypass=server["bypass"], render_mode=server["render_mode"],
        cache_policy=server["cache_policy"], refresh_cadence=server["cadence"],
        crude_message_count=server["crude"], prompt_budget_tokens=server["budget"],
        content_injection_depth=server["content_depth"],
        nudge_injection_depth=server["nudge_depth"], stm_enabled=server["stm_enabled"])
    if labels:
        await set_categories(stm, labels)
    # Oldest first, so the clock only moves forward.
    for row in sorted(rows, key=lambda r: -r["age"]):
        clock.set(NOW - row["age"])
        key = (server_key(row["channel"], row["persona"]) if row["scope"] == "server"
               else user_key(row["channel"], persona=row["persona"],
                             server=GUILD if row["scope"] == "copy" else None))
        lines = [("user" if n % 2 == 0 else "model", None, text)
                 for n, text in enumerate(row["lines"])]
        await capture(stm, key, *lines, counter_increment=row["counter"],
                      lineage=row["lineage"], parent=row["parent"])
        if row["summary"] is not None or row["categories"] is not None:
            await write(stm, key, summary=row["summary"], categories=row["categories"],
                        lineage=row["lineage"], parent=row["parent"])
    if opt_in:
        clock.set(NOW - 1000)
        await write(stm, user_key("far", server="elsewhere"), summary="far away")
        await set_opt_in(stm)
    clock.set(NOW)


class HideC3:
    """A third-party visibility policy beside (or instead of) the built-in one."""

    @hookimpl
    def stm_visibility_policies(self) -> Iterable[VisibilityPolicy]:
        return [lambda record, ctx: False if record.key.channel_id == "c3" else None]


#: The visibility policies registered: the built-in one, none, or one more.
POLICIES = st.sampled_from(["builtin", "builtin", "none", "extra"])


@asynccontextmanager
async def world(url: str, clock: ManualClock, env: dict[str, Any], policies: str,
                plugins: tuple[object, ...]) -> AsyncIterator[Stm]:
    async with open_store(url, clock=clock, load_entrypoints=False,
                          settings=Settings(**env), plugins=list(plugins)) as stm:
        if policies == "none":
            stm.pm.unregister(name="stm_plugins.privacy")
        elif policies == "extra":
            stm.pm.register(HideC3(), name="hide-c3")
        yield stm


class Failures(logging.Handler):
    """The builds that failed (``build_context`` logs them and answers the
    empty fallback, which two failing builds would agree on)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def warm_and_cold(env: dict[str, Any], server: dict[str, Any],
                        rows: list[dict[str, Any]], turn_fields: dict[str, Any],
                        opt_in: bool, policies: str = "builtin",
                        plugins: tuple[object, ...] = ()) -> tuple[StmContext, StmContext]:
    """The build of a long-lived store (every view it reads loaded, its
    memos filled) and that of a store freshly opened on the same file, whose
    views keep every row."""
    clock = ManualClock(NOW)
    failures = Failures()
    logging.getLogger("stm.pipeline").addHandler(failures)
    try:
        builds = await _warm_and_cold(clock, env, server, rows, turn_fields, opt_in,
                                      policies, plugins)
    finally:
        logging.getLogger("stm.pipeline").removeHandler(failures)
    assert failures.messages == []
    return builds


async def _warm_and_cold(clock: ManualClock, env: dict[str, Any], server: dict[str, Any],
                         rows: list[dict[str, Any]], turn_fields: dict[str, Any],
                         opt_in: bool, policies: str, plugins: tuple[object, ...]
                         ) -> tuple[StmContext, StmContext]:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'stm.db'}"
        async with world(url, clock, env, policies, plugins) as stm:
            await seed(stm, clock, server, rows, opt_in)
            await stm.build_context(make_turn(**turn_fields))  # loads every view it reads
            warm = await stm.build_context(make_turn(**turn_fields))  # a host's next Turn
            # Once more, now that the memos hold what the builds before made.
            assert await stm.build_context(make_turn(**turn_fields)) == warm
            # Its views unbounded: what a bounded view let go is the cache's
            # business, never the answer's.
            unbounded = {**env, "cache_max_rows_per_view": 100_000}
            async with world(url, clock, unbounded, policies, plugins) as fresh:
                assert not fresh.cache.users.peek("alice")
                cold = await fresh.build_context(make_turn(**turn_fields))
    return warm, cold


def row(channel: str, age: int, **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"scope": "server", "channel": channel, "persona": None,
                              "lineage": None, "parent": None, "lines": ["hi"],
                              "counter": 0, "summary": "a plan", "categories": None,
                              "age": age}
    values.update(fields)
    return values


BASE_SERVER: dict[str, Any] = {
    "private": set(), "bypass": False, "render_mode": None, "cache_policy": None,
    "labels": None, "cadence": None, "crude": None, "budget": None, "content_depth": None,
    "nudge_depth": None, "stm_enabled": None}
BASE_TURN: dict[str, Any] = {"channel_id": "c1", "has_tools": False}
BASE_ENV: dict[str, Any] = {"max_other_channels": 3, "cache_max_rows_per_view": 1000,
                            "prompt_budget_tokens": 2000}


@pytest.mark.parametrize(("case", "env", "rows", "turn", "policies"), [
    # The fresh window's edge: an hour old is fresh, a millisecond more is not.
    *[(f"fresh window {age}", {}, [row("c2", age)], {}, "builtin")
      for age in (HOUR - 1, HOUR, HOUR + 1)],
    # The live row's own age moves the block too (turns with tools), and its
    # TTL decides whether it counts (a window longer than 12 h).
    *[(f"live row {age}", {}, [row("c2", 5 * HOUR), row("c1", age)], {"has_tools": True},
       "builtin") for age in (HOUR, HOUR + 1)],
    *[(f"live row without summary {age}", {"fresh_window_minutes": 1000.0},
       [row("c2", 20 * HOUR), row("c1", age, summary=None)], {"has_tools": True}, "builtin")
      for age in (12 * HOUR, 12 * HOUR + 1)],
    # A one-row view holding only the current channel's row: the older row it
    # dropped is the one to show, whatever the cap.
    *[(f"dropped under cap {cap}", {"max_other_channels": cap, "cache_max_rows_per_view": 1},
       [row("c2", 2 * HOUR), row("c1", 1)], {}, "builtin") for cap in (1, 2)],
    # The view shows its cap but dropped the live row: the store reads it.
    ("live row dropped", {"cache_max_rows_per_view": 3},
     [row("c1", 5 * HOUR), row("c2", 3), row("c3", 2), row("c4", 1)], {"has_tools": True},
     "builtin"),
    # A DM shows DM rows only, even with no policy to hide the user's own
    # copies of server rows; and keeps a DM row's categories in stored order.
    ("DM without policies", {}, [row("c2", 1, scope="copy"), row("c3", 2, scope="dm")],
     {"server_id": None}, "none"),
    ("DM categories", {}, [row("c2", 1, scope="dm", summary=None,
                               categories={"plan": "go", "summary": "calm"})],
     {"server_id": None}, "builtin"),
])
def test_edges_the_generator_may_miss(case: str, env: dict[str, Any],
                                      rows: list[dict[str, Any]], turn: dict[str, Any],
                                      policies: str) -> None:
    warm, cold = asyncio.run(warm_and_cold({**BASE_ENV, **env}, BASE_SERVER, rows,
                                           {**BASE_TURN, **turn}, False, policies))
    assert warm == cold, case
    assert warm.memory_items, case


def test_a_dropped_row_is_shown_from_the_database() -> None:
    """A one-row view that kept only the current channel's row: the row it
    let go is read back, warm as cold."""
    rows = [row("c2", 2 * HOUR, summary="the older plan"), row("c1", 1)]
    env = {**BASE_ENV, "max_other_channels": 1, "cache_max_rows_per_view": 1}
    warm, cold = asyncio.run(warm_and_cold(env, BASE_SERVER, rows, BASE_TURN, False))
    assert warm == cold and "the older plan" in warm.memory_items[0].text


class DoubleCounter:
    """A counter that is not byte-bounded: two tokens a character."""

    @hookimpl
    def stm_token_counter(self, provider: str) -> object:
        return (lambda text: 2 * len(text)) if provider == "double" else None


@pytest.mark.parametrize("provider", ["openai", "double"])
def test_the_budget_edge(provider: str) -> None:
    """A block (nudge included) of exactly the budget's tokens is kept whole;
    one token less and it is degraded, warm as cold."""
    count = estimate_tokens if provider == "openai" else (lambda text: 2 * len(text))
    rows = [*(row(f"c{n}", n, lines=["a long line of talk"] * 3) for n in (2, 3, 4)),
            row("c1", 5, counter=5)]
    server = {**BASE_SERVER, "render_mode": "crude_summary"}
    turn = {**BASE_TURN, "has_tools": True, "provider": provider}
    plugins = (DoubleCounter(),)
    env = {**BASE_ENV, "prompt_budget_tokens": 0}
    full, cold = asyncio.run(warm_and_cold(env, server, rows, turn, False, plugins=plugins))
    assert full == cold
    assert full.nudge_item is not None and len(full.memory_items) == 2
    tokens = sum(count(i.text) for i in (*full.memory_items, full.nudge_item))
    env = {**BASE_ENV, "prompt_budget_tokens": tokens}
    warm, cold = asyncio.run(warm_and_cold(env, server, rows, turn, False, plugins=plugins))
    assert warm == cold == full
    env = {**BASE_ENV, "prompt_budget_tokens": tokens - 1}
    warm, cold = asyncio.run(warm_and_cold(env, server, rows, turn, False, plugins=plugins))
    assert warm == cold != full
    assert sum(count(i.text) for i in (*warm.memory_items, *[warm.nudge_item])
               if i is not None) <= tokens - 1


def test_a_block_over_its_budget_is_degraded() -> None:
    rows = [row("c2", 1, lines=["a long line of talk"] * 3)]
    server = {**BASE_SERVER, "render_mode": "crude_summary"}
    warm, cold = asyncio.run(warm_and_cold({**BASE_ENV, "prompt_budget_tokens": 30}, server,
                                           rows, BASE_TURN, False))
    assert warm == cold
    [item] = warm.memory_items  # the raw lines went to fit
    assert "a plan" in item.text and "a long line" not in item.text


def compare(*, derandomize: bool, examples: int,
            min_rows: int = 0) -> list[tuple[bool, bool, bool]]:
    """Run the property; for each example: (a DM turn, the user opted in,
    other channels were shown)."""
    seen: list[tuple[bool, bool, bool]] = []

    @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(env=ENV, server=SERVER, rows=st.lists(ROW, min_size=min_rows, max_size=8),
           turn=TURN, opt_in=st.sampled_from([False, False, False, True]),
           policies=POLICIES)
    def check(env: dict[str, Any], server: dict[str, Any], rows: list[dict[str, Any]],
              turn: dict[str, Any], opt_in: bool, policies: str) -> None:
        warm, cold = asyncio.run(warm_and_cold(env, server, rows, turn, opt_in, policies))
        assert warm == cold
        others = any(i.kind == "other_channels" for i in warm.memory_items)
        seen.append((turn["server_id"] is None, opt_in, others))

    check()
    return seen


def test_a_warm_build_equals_a_cold_one() -> None:
    compare(derandomize=False, examples=100)  # new examples on every run


def test_the_examples_show_what_they_compare() -> None:
    """Equal by showing nothing would prove little. The same examples on
    every run, so the counts are fixed."""
    seen = compare(derandomize=True, examples=100, min_rows=4)
    showing = [s for s in seen if s[2]]
    assert len(showing) >= len(seen) // 5, f"{len(showing)} of {len(seen)} showed channels"
    assert sum(s[0] for s in showing) >= 3, "too few DMs showed other channels"
    assert sum(s[1] for s in showing) >= 3, "too few opted-in users were shown channels"


class Shout:
    """A converter registered after the first build."""

    @hookimpl
    def stm_mention_converters(self) -> Iterable[MentionConverter]:
        return [lambda text, turn: text.upper()]


async def test_a_new_plugin_set_gets_a_new_plan(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await write(stm, server_key("222"), summary="see <#333>")
        first = await stm.build_context(make_turn())
        plan = stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks)
        assert stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks) is plan  # made once
        stm.pm.register(Shout(), name="shout")
        shouted = stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks)
        assert shouted is not plan and len(shouted.converters) == len(plan.converters) + 1
        assert shouted.memo is not plan.memo and not shouted.memo
        ctx = await stm.build_context(make_turn())
        assert ctx.memory_items[0].text.startswith("[SYSTEM: TOMORI REMEMBERS")
        # Without it again, a new plan: nothing of the shouting set is served.
        stm.pm.unregister(name="shout")
        assert stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks) is not shouted
        assert await stm.build_context(make_turn()) == first


async def test_a_policy_registered_between_warm_builds_hides_rows_at_once(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await write(stm, server_key("c3"), summary="in c3")
        await write(stm, server_key("c4"), summary="in c4")
        before = await stm.build_context(make_turn())
        assert "in c3" in before.memory_items[0].text
        assert "in c4" in before.memory_items[0].text
        stm.pm.register(HideC3(), name="hide-c3")
        hidden = await stm.build_context(make_turn())
        assert "in c3" not in hidden.memory_items[0].text
        assert "in c4" in hidden.memory_items[0].text
        stm.pm.unregister(name="hide-c3")
        assert await stm.build_context(make_turn()) == before


async def test_the_cache_answers_the_walk_unless_an_origin_must_be_read(
        open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await write(stm, server_key("c3"), summary="in c3")
        await write(stm, user_key("far", server="elsewhere"), summary="far away")
        turn = make_turn()
        await stm.build_context(turn)  # views and settings cached
        plan = stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks)
        loaded = warm_load(stm.engine, turn, "alice")
        assert loaded is not None
        found = cached_visible(stm.engine, turn, loaded, plan.policies)
        assert found is not None
        assert found == await newest_visible(stm.engine, turn, loaded, plan.policies)
        assert [r.summary for r in found[0]] == ["in c3"]
        # Opted in, the row of another server folds in: its server's settings
        # are read by the walk that may await, which shows it.
        await set_opt_in(stm)
        loaded = warm_load(stm.engine, turn, "alice")
        assert loaded is not None
        assert cached_visible(stm.engine, turn, loaded, plan.policies) is None
        shown, servers = await newest_visible(stm.engine, turn, loaded, plan.policies)
        # Written at one time: the server's own row first.
        assert [r.summary for r in shown] == ["in c3", "far away"]
        assert set(servers) == {GUILD, "elsewhere"}
        assert "far away" in (await stm.build_context(make_turn())).memory_items[0].text


async def test_the_plan_keeps_a_bounded_number_of_counters(open_stm: OpenStm) -> None:
    async with open_stm("memory://") as stm:
        await write(stm, server_key("222"), summary="a plan")
        first = await stm.build_context(make_turn())
        plan = stm.hooks.plugin_set_memo(PLAN, make_plan, stm.hooks)
        assert plan.counters == {"openai": stm.hooks.token_counter("openai")}
        # Providers are the host's names: the plan starts over past its bound.
        for n in range(MAX_PROVIDERS + 5):
            ctx = await stm.build_context(make_turn(provider=f"provider-{n}"))
            assert [i.text for i in ctx.memory_items] == [i.text for i in first.memory_items]
        assert 0 < len(plan.counters) <= MAX_PROVIDERS
        assert f"provider-{MAX_PROVIDERS + 4}" in plan.counters
