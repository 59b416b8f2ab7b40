"""``build_context``: the short-term-memory part of one turn's prompt.

The stages, in order (one module each)::

    load -> gather -> crossserver -> expiry -> visibility -> sortcap
         -> render_other -> same_channel + nudge (turns with tools)
         -> mentions (every emitted text) -> budget -> depth (``finish``)

Every turn runs them, in this one body: there is no second path. What they
take from the plugin set (the converters, the token counters, the render
memo, the visibility policies) is looked up once per plugin set (``plan``), a
warm turn loads without a coroutine per read (``load.warm_load``) and walks
without one (``recent.cached_visible``), and the rows a turn showed before
render from the memo.
The server's cache policy (``cache_policy``) decides ages and placement. The
objects returned are handed out again while their texts are the same
(``results``). Filters commute, so expiry runs before visibility (cheaper, and
no settings of a server whose rows all expired get loaded); the cap comes
after both. Stages 2 to 6 run as one walk over the newest rows (``recent``),
which ends at the cap: the cost does not grow with the number of channels.
``build_context`` never raises: any error is logged and the empty fallback of
the spec is returned.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hookspecs.types import TokenCounter
from stm_core.engine.profile import ServerProfile
from stm_core.models import StmContext, Turn
from stm_core.pipeline.budget import Block, fit_budget, within_budget
from stm_core.pipeline.finish import finished_context
from stm_core.pipeline.load import load, warm_load
from stm_core.pipeline.memory_ttl import is_expired
from stm_core.pipeline.mentions import convert_mentions
from stm_core.pipeline.nudge import nudge_text
from stm_core.pipeline.plan import PLAN, BuildPlan, make_plan
from stm_core.pipeline.recent import cached_visible, newest_visible
from stm_core.pipeline.render_other import CategoryOrder, render_other_channels
from stm_core.pipeline.same_channel import live_body, live_key, wrap_same_channel
from stm_core.storage.records import DM_SERVER, MemoryRecord, ServerSettings

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

log = logging.getLogger("stm.pipeline")

#: No triggering user: nothing to show, default depths (reference §9).
NO_USER_CONTEXT = StmContext()


async def build_context(engine: Engine, turn: Turn) -> StmContext:
    """Memory items, the nudge and both depths for ``turn``. Never raises."""
    user_id = turn.user_id
    if user_id is None:
        return NO_USER_CONTEXT
    try:
        # Stage 1: from the cache alone when it holds everything (no coroutine).
        loaded = warm_load(engine, turn, user_id)
        if loaded is None:
            loaded = await load(engine, turn, user_id)
        env = engine.settings
        profile = loaded.profile
        now = loaded.now_ms
        hooks = engine.hooks
        plan: BuildPlan = hooks.plugin_set_memo(PLAN, make_plan, hooks)

        # Stages 2 to 6: the other-channel rows to show, newest first.
        visible = cached_visible(engine, turn, loaded, plan.policies)
        if visible is None:
            visible = await newest_visible(engine, turn, loaded, plan.policies)
        shown, servers = visible

        # Stage 7: every row shown, with the server's raw lines.
        other: str | None = None
        newest: int | None = None
        order: CategoryOrder | None = None
        if shown:
            order = _category_order(engine, turn, profile, servers)
            other, newest = _other_text(turn, profile, shown, now, order,
                                        profile.crude_message_count, plan)

        # Stage 8: the live row, its block and the nudge (turns with tools).
        record: MemoryRecord | None = None
        live: MemoryRecord | None = None
        same_body: str | None = None
        same: str | None = None
        nudge: str | None = None
        has_tools = turn.has_tools
        if has_tools:
            # From the view this turn loaded when it holds the row; else the
            # store, which also knows rows a view lacks and keys with no row.
            key = live_key(turn, user_id)
            view = loaded.server if key.scope_kind == "server" else loaded.user.memories
            record = view.records.get(key) if view is not None else None
            if record is None:
                record = await engine.live_record(key)
            # Expired, it shows nothing and is not fresh; its counter still counts.
            if record is not None and not is_expired(record, now, crude_ttl_ms=env.crude_ttl_ms,
                                                     summary_ttl_ms=env.summary_ttl_ms):
                live = record
                same_body = live_body(profile, live, plan.memo)
                if same_body is not None:
                    same = _same_text(turn, same_body, plan)
            nudge = nudge_text(engine, turn, profile, record)
            if nudge is not None:
                nudge = convert_mentions(nudge, turn, plan.converters)

        # Stage 9b: the prompt budget; a block over it is degraded.
        budget = profile.prompt_budget_tokens
        count = plan.counters.get(turn.provider)
        if count is None:
            count = plan.token_counter(hooks, turn.provider)
        if not within_budget(budget, count, nudge, same, other):
            if order is None:
                order = _category_order(engine, turn, profile, servers)
            other, same, newest = _fit(budget, count, turn, profile, shown, now, order,
                                       nudge=nudge, same_body=same_body, plan=plan)

        # Stages 9 and 11: the items at their depths.
        return finished_context(profile, env, now, other=other, same=same, nudge=nudge,
                                newest_other_ms=newest, live=live, has_tools=has_tools)
    except Exception:
        log.exception("short-term memory context failed (server %s, channel %s); "
                      "returning the empty fallback", turn.server_id, turn.channel_id)
        return StmContext.error_fallback()


def _fit(budget: int, count: TokenCounter, turn: Turn, profile: ServerProfile,
         shown: list[MemoryRecord], now_ms: int, order: CategoryOrder, *, nudge: str | None,
         same_body: str | None, plan: BuildPlan) -> Block:
    """Stage 9b over budget: the block degraded until it fits (``budget``)."""

    def render_other(kept: int, raw_lines: int) -> tuple[str | None, int | None]:
        return _other_text(turn, profile, shown[:kept], now_ms, order, raw_lines, plan)

    def render_same(body: str) -> str:
        return _same_text(turn, body, plan)

    return fit_budget(budget, count, nudge=nudge, render_other=render_other,
                      entries=len(shown), raw_lines=profile.crude_message_count,
                      same_body=same_body, render_same=render_same)


def _other_text(turn: Turn, profile: ServerProfile, rows: list[MemoryRecord], now_ms: int,
                order: CategoryOrder, raw_lines: int, plan: BuildPlan
                ) -> tuple[str | None, int | None]:
    """Stages 7 and 10: the other channels' text (``None`` when empty) and
    the newest update it shows."""
    text, newest = render_other_channels(turn, profile, rows, now_ms, order,
                                         crude_count=raw_lines, memo=plan.memo)
    return (convert_mentions(text, turn, plan.converters) if text else None), newest


def _same_text(turn: Turn, body: str, plan: BuildPlan) -> str:
    """Stages 8 and 10: the same-channel block around ``body``."""
    return convert_mentions(wrap_same_channel(turn, body), turn, plan.converters)


def _category_order(engine: Engine, turn: Turn, profile: ServerProfile,
                    servers: Mapping[str, ServerSettings]) -> CategoryOrder:
    """Position order of each origin server's categories (decision 6)."""

    def order(origin: str) -> Mapping[str, str] | None:
        if origin == DM_SERVER:
            return None
        if origin == turn.server_id:
            return profile.slug_map
        settings = servers.get(origin)
        return engine.profiles.profile(origin, settings).slug_map if settings else None

    return order
