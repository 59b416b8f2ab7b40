"""``build_context``: the short-term-memory part of one turn's prompt.

The stages, in order (one module each)::

    load -> gather -> crossserver -> expiry -> visibility -> sortcap
         -> render_other -> same_channel + nudge (turns with tools)
         -> mentions (every emitted text) -> budget -> depth (``finish``)

The server's cache policy (``cache_policy``) decides ages and placement.

The usual turn takes a fused path that does the same work in one function
(``warm``); every other turn, and any turn that path declines, runs the
stages. The objects returned are handed out again while their texts
are the same (``results``). Filters commute, so expiry runs before visibility
(cheaper, and no settings of a server whose rows all expired get loaded); the
cap comes after both.
Stages 2 to 6 run as one walk over the newest rows (``recent``), which ends
at the cap: the cost does not grow with the number of channels.
``build_context`` never raises: any error is logged and the empty fallback
of the spec is returned.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stm_core.models import StmContext, Turn
from stm_core.pipeline.budget import fit_budget
from stm_core.pipeline.finish import finished_context
from stm_core.pipeline.load import Loaded, load, warm_load
from stm_core.pipeline.mentions import convert_mentions
from stm_core.pipeline.nudge import nudge_text
from stm_core.pipeline.recent import newest_visible
from stm_core.pipeline.render_memo import new_render_memo
from stm_core.pipeline.render_other import CategoryOrder, render_other_channels
from stm_core.pipeline.same_channel import live_body, live_key, wrap_same_channel
from stm_core.pipeline.warm import warm_context
from stm_core.profile import ServerProfile
from stm_core.storage.records import DM_SERVER, MemoryKey, MemoryRecord, ServerSettings

if TYPE_CHECKING:
    from stm_core.store import Stm

log = logging.getLogger("stm.pipeline")

#: No triggering user: nothing to show, default depths (reference §9).
NO_USER_CONTEXT = StmContext()


async def build_context(stm: Stm, turn: Turn) -> StmContext:
    """Memory items, the nudge and both depths for ``turn``. Never raises."""
    user_id = turn.user_id
    if user_id is None:
        return NO_USER_CONTEXT
    try:
        loaded = warm_load(stm, turn, user_id)
        if loaded is not None:
            context = warm_context(stm, turn, loaded)
            if context is not None:
                return context
        else:
            loaded = await load(stm, turn, user_id)
        return await staged_build(stm, turn, user_id, loaded)
    except Exception:
        log.exception("short-term memory context failed (server %s, channel %s); "
                      "returning the empty fallback", turn.server_id, turn.channel_id)
        return StmContext.error_fallback()


async def staged_build(stm: Stm, turn: Turn, user_id: str, loaded: Loaded) -> StmContext:
    """Stages 2 to 11 over what ``load`` read: every kind of turn."""
    env = stm.settings
    profile = loaded.profile
    now = loaded.now_ms
    crude_ttl, summary_ttl = env.crude_ttl_ms, env.summary_ttl_ms

    shown, servers = await newest_visible(stm, turn, loaded)

    hooks = stm.hooks
    converters = hooks.mention_converters()
    memo = hooks.plugin_set_memo("render", new_render_memo)
    order = _category_order(stm, turn, profile, servers)

    def render_other(kept: int, raw_lines: int) -> tuple[str | None, int | None]:
        text, newest = render_other_channels(turn, profile, shown[:kept], now, order,
                                             crude_count=raw_lines, memo=memo)
        return (convert_mentions(text, turn, converters) if text else None), newest

    def render_same(body: str) -> str:
        return convert_mentions(wrap_same_channel(turn, body), turn, converters)

    same_body: str | None = None
    nudge: str | None = None
    record = None
    if turn.has_tools:
        record = await _live_record(stm, loaded, live_key(turn, user_id))
        same_body = live_body(profile, record, now, crude_ttl_ms=crude_ttl,
                              summary_ttl_ms=summary_ttl, memo=memo)
        nudge = nudge_text(stm, turn, profile, record)
        if nudge is not None:
            nudge = convert_mentions(nudge, turn, converters)
    block = fit_budget(profile.prompt_budget_tokens, stm.hooks.token_counter(turn.provider),
                       nudge=nudge, render_other=render_other, entries=len(shown),
                       raw_lines=profile.crude_message_count, same_body=same_body,
                       render_same=render_same)

    return finished_context(profile, env, now, other=block.other, same=block.same,
                            nudge=nudge, newest_other_ms=block.newest_other_ms,
                            record=record, has_tools=turn.has_tools)


async def _live_record(stm: Stm, loaded: Loaded, key: MemoryKey) -> MemoryRecord | None:
    """The live row: from the view this turn already loaded when it holds the
    row, else through the store (which also knows rows the view lacks)."""
    view = loaded.server if key.scope_kind == "server" else loaded.user.memories
    record = view.records.get(key) if view is not None else None
    return record if record is not None else await stm.live_record(key)


def _category_order(stm: Stm, turn: Turn, profile: ServerProfile,
                    servers: Mapping[str, ServerSettings]) -> CategoryOrder:
    """Position order of each origin server's categories (decision 6)."""

    def order(origin: str) -> Mapping[str, str] | None:
        if origin == DM_SERVER:
            return None
        if origin == turn.server_id:
            return profile.slug_map
        settings = servers.get(origin)
        return stm.profiles.profile(origin, settings).slug_map if settings else None

    return order
