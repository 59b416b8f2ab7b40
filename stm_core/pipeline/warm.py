"""The usual turn, built in one function (the warm path).

:mod:`stm_core.pipeline.build` runs a turn as stages, one module each, so
every rule has one place. Most turns are of one kind, though: everything
they read is cached, the user does not recall other servers, and the block
fits its prompt budget; in a server channel they show that server's rows,
in a DM the user's DM rows. For those, this function does the same work over
the cached view in one body: the stages' wrappers, closures and small
records (about 40 % of the Python calls of a staged build) are left out, and
what depends only on the plugin set (the converters, the policies, the
render memo) is looked up once per plugin set (:class:`PluginPlan`). The
leaves are the stages' own (the walk, the renderers, the memos), and so is
the end: :func:`~stm_core.pipeline.finish.finished_context`.

A turn of any other kind (the cross-server opt-in, a view whose bound
dropped rows that could show, a live row the view does not hold, a block over
its budget) gets ``None`` here and takes the stages. A property test keeps
both equal over generated stores and turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from stm_core.hooks import Hooks
from stm_core.models import StmContext, Turn
from stm_core.pipeline.finish import finished_context
from stm_core.pipeline.load import Loaded
from stm_core.pipeline.mentions import convert_mentions
from stm_core.pipeline.nudge import nudge_text
from stm_core.pipeline.render_memo import RenderMemo, new_render_memo
from stm_core.pipeline.render_other import render_other_channels
from stm_core.pipeline.same_channel import live_body, wrap_same_channel
from stm_core.pipeline.sortcap import first_visible
from stm_core.pipeline.visibility import visibility_context
from stm_core.plugin_types import MentionConverter, VisibilityPolicy, is_byte_bounded
from stm_core.storage.records import DM_SERVER, MemoryKey, MemoryRecord

if TYPE_CHECKING:
    from stm_core.store import Stm


@attrs.frozen
class PluginPlan:
    """What a warm build takes from the plugin set, looked up once per set."""

    converters: tuple[MentionConverter, ...]
    policies: tuple[VisibilityPolicy, ...]
    #: The staged build's render memo: both paths share its entries.
    memo: RenderMemo


def plugin_plan(hooks: Hooks) -> PluginPlan:
    return PluginPlan(converters=hooks.mention_converters(),
                      policies=hooks.visibility_policies(),
                      memo=hooks.plugin_set_memo("render", new_render_memo))


def warm_context(stm: Stm, turn: Turn, loaded: Loaded) -> StmContext | None:
    """The context of a usual turn, equal to the staged build's, or ``None``
    when the turn is not one (the caller then runs the stages)."""
    user = loaded.user
    if user.prefs.crossserver_opt_in:
        return None  # other servers' rows may fold in
    server_id = turn.server_id
    profile = loaded.profile
    env = stm.settings
    now = loaded.now_ms
    crude_ttl, summary_ttl = env.crude_ttl_ms, env.summary_ttl_ms
    hooks = stm.hooks
    plan: PluginPlan = hooks.plugin_set_memo("warm plan", plugin_plan, hooks)
    converters = plan.converters

    # Stages 2 to 6 (gather, crossserver, expiry, visibility, sortcap).
    view = loaded.server
    rows: Iterable[MemoryRecord]
    settings = profile.settings
    if view is not None:  # a server channel: the server's rows, its settings alone
        assert server_id is not None
        rows = view.newest_first()
        servers = {server_id: settings} if settings is not None else {}
        live_key = MemoryKey.server(server_id, turn.channel_id, turn.persona_id)
        slugs: Mapping[str, str] | None = profile.slug_map
    else:  # a DM: the user's rows from DMs, no server's settings
        view = user.memories
        rows = (r for r in view.newest_first() if r.key.server_id == DM_SERVER)
        servers = {}
        live_key = MemoryKey.user(user.prefs.user_id, turn.channel_id, turn.persona_id, None)
        slugs = None  # DMs keep their categories' stored order
    ctx = visibility_context(turn, profile, False, servers)
    cap = env.max_other_channels
    shown = first_visible(rows, turn, plan.policies, ctx, cap, now_ms=now,
                          crude_ttl_ms=crude_ttl, summary_ttl_ms=summary_ttl)
    dropped = view.dropped_through_ms
    if dropped is not None and cap > 0 and not (len(shown) == cap
                                                and shown[-1].updated_at_ms > dropped):
        return None  # rows the view let go could show: the stages read them

    # Stage 8: the live row, its block and the nudge (turns with tools).
    record: MemoryRecord | None = None
    same: str | None = None
    nudge: str | None = None
    has_tools = turn.has_tools
    if has_tools:
        record = view.records.get(live_key)
        if record is None and live_key not in view.absent:
            return None  # the store reads it
        nudge = nudge_text(stm, turn, profile, record)
        if nudge is not None:
            nudge = convert_mentions(nudge, turn, converters)
        body = live_body(profile, record, now, crude_ttl_ms=crude_ttl,
                         summary_ttl_ms=summary_ttl, memo=plan.memo)
        if body is not None:
            same = convert_mentions(wrap_same_channel(turn, body), turn, converters)

    # Stage 7: every row shown comes from the current server (or from DMs).
    other: str | None = None
    newest: int | None = None
    if shown:
        def order(origin: str) -> Mapping[str, str] | None:
            return slugs

        other, newest = render_other_channels(turn, profile, shown, now, order,
                                              crude_count=profile.crude_message_count,
                                              memo=plan.memo)
        other = convert_mentions(other, turn, converters) if other else None

    # Stage 9b: within the budget as it is, or the stages degrade it.
    budget = profile.prompt_budget_tokens
    count = hooks.token_counter(turn.provider)  # asked on every build, as by the stages
    if budget > 0:
        most = 0  # budget.most_tokens of the three, inline
        for text in (nudge, same, other):
            if text:
                most += len(text) if text.isascii() else 4 * len(text)
        if not (most <= budget and is_byte_bounded(count)):
            # Counted as the stages count: the nudge, the same block, the others.
            tokens = count(nudge) if nudge else 0
            if same:
                tokens += count(same)
            if other:
                tokens += count(other)
            if tokens > budget:
                return None

    return finished_context(profile, env, now, other=other, same=same, nudge=nudge,
                            newest_other_ms=newest, record=record, has_tools=has_tools)
