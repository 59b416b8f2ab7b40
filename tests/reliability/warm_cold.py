"""The world and the operations of the warm-equals-cold property tests.

A small world (two servers, channels with a thread and a private channel, two
personas of different lineages, two users, a DM) and every kind of change a
store sees: turns, tool calls, every admin mutation, the janitor,
undo/restore/forget, and clock moves onto each TTL, freshness and retention
boundary. ``probe`` reads what a host would get for every turn of the world,
so that a long-lived store and a freshly opened one can be compared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.errors import StmError
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import ChangeNotice, MemoryFilter
from stm_core.store import Stm

SERVERS = ("g1", "g2")
CHANNELS = ("c1", "c2", "c3")
THREAD, THREAD_PARENT = "t1", "c1"
PERSONAS = (("p1", "lin1"), ("p2", "lin2"))
USERS = ("u1", "u2")
PROVIDERS = ("openai", "anthropic", "novelai")

#: Short TTLs and windows, so clock moves reach every boundary in a few steps.
SETTINGS = Settings(ttl_hours=1.0, summary_ttl_hours=2.0, fresh_window_minutes=10.0,
                    janitor_retention_days=0.125)
#: The same with caches so small that every step evicts something.
SMALL_CACHE_SETTINGS = attrs.evolve(SETTINGS, cache_max_servers=1, cache_max_users=1,
                                    cache_max_rows_per_view=2)
#: Views that drop rows (builds walk the rows kept per lineage), nothing evicted.
BOUNDED_VIEW_SETTINGS = attrs.evolve(SETTINGS, cache_max_rows_per_view=3)

#: The store writing beside each store under test (another process on the
#: same database), by the store under test.
OTHERS: dict[Stm, Stm] = {}

BOUNDARIES_MS = (SETTINGS.crude_ttl_ms, SETTINGS.summary_ttl_ms, SETTINGS.fresh_window_ms,
                 SETTINGS.retention_ms)


def turn(*, server: str | None, channel: str, persona: int, user: str,
         provider: str = "openai") -> Turn:
    persona_id, lineage = PERSONAS[persona]
    thread = channel == THREAD
    return Turn(user_id=user, channel_id=channel, server_id=server,
                parent_channel_id=THREAD_PARENT if thread and server else None,
                persona_id=persona_id, persona_lineage_id=lineage, bot_name=f"Bot{persona}",
                triggerer_name=f"Name-{user}", provider=provider,
                thread_ids=frozenset({THREAD}) if thread else frozenset())


def probe_turns() -> list[Turn]:
    """Every place a host may ask from: each server and channel, each persona,
    each user, a DM, and each provider once."""
    turns = [turn(server=s, channel=c, persona=p, user=u)
             for s in SERVERS for c in (*CHANNELS, THREAD) for p in (0, 1) for u in USERS]
    turns += [turn(server=None, channel=f"dm-{u}", persona=p, user=u)
              for u in USERS for p in (0, 1)]
    turns += [turn(server="g1", channel="c1", persona=0, user="u1", provider=pv)
              for pv in PROVIDERS]
    return turns


async def probe(stm: Stm) -> list[tuple[Any, Any, Any]]:
    """What a host gets for every probe turn: context, tool schema, availability."""
    out = []
    for t in probe_turns():
        out.append((await stm.build_context(t), await stm.tool_schema(t),
                    await stm.tool_available(t)))
    return out


Op = Callable[[Stm, ManualClock], Awaitable[object]]

servers = st.sampled_from(SERVERS)
places = st.tuples(st.sampled_from((*SERVERS, None)), st.sampled_from((*CHANNELS, THREAD)),
                   st.integers(0, 1), st.sampled_from(USERS))
texts = st.sampled_from(("teal sky", "red sea", "", "a b c", "same"))


def _place_turn(place: tuple[str | None, str, int, str]) -> Turn:
    server, channel, persona, user = place
    if server is None:
        channel = f"dm-{user}"
    return turn(server=server, channel=channel, persona=persona, user=user)


def record_op(place: tuple[str | None, str, int, str], text: str) -> Op:
    async def run(stm: Stm, clock: ManualClock) -> object:
        t = _place_turn(place)
        window = [HistoryMessage(author_type="user", content=f"{text} from {t.user_id}",
                                 speaker_name=t.triggerer_name, author_id=t.user_id)]
        reply = [PersonaResponse(content=f"ok {text}", persona_name=t.bot_name,
                                 persona_id=t.persona_id,
                                 persona_lineage_id=t.persona_lineage_id)]
        return await stm.record_turn(t, window, reply)
    run.__qualname__ = f"record{place}{text!r}"
    return run


def tool_op(place: tuple[str | None, str, int, str], text: str, categories: bool) -> Op:
    async def run(stm: Stm, clock: ManualClock) -> object:
        args: dict[str, object] = ({"categories": {"summary": text or "x"}} if categories
                                   else {"summary": text})
        return await stm.apply_tool_call(_place_turn(place), args)
    run.__qualname__ = f"tool{place}{text!r}{categories}"
    return run


def admin_op(name: str, **kwargs: Any) -> Op:
    async def run(stm: Stm, clock: ManualClock) -> object:
        try:
            return await getattr(stm.admin, name)(**kwargs)
        except StmError as exc:  # a refusal the store explains is an answer too
            return exc
    run.__qualname__ = f"admin.{name}{kwargs}"
    return run


def janitor_op() -> Op:
    async def run(stm: Stm, clock: ManualClock) -> object:
        return await stm.janitor.run_once()
    run.__qualname__ = "janitor"
    return run


def clock_back_op(ms: int) -> Op:
    """The clock steps back (NTP does)."""
    async def run(stm: Stm, clock: ManualClock) -> object:
        clock.set(clock.now_ms() - ms)
        return None
    run.__qualname__ = f"clock-{ms}"
    return run


def remote_rewrite_op(place: tuple[str | None, str, int, str], texts: Sequence[str]) -> Op:
    """Another store on the same database clears a channel, then records
    turns there (its rows deleted and written anew: their revs restart),
    while the store under test is busy: it hears of all of it at once, as
    one notice whose rows it reads again, as its listener does."""
    async def run(stm: Stm, clock: ManualClock) -> object:
        other = OTHERS[stm]
        channel = _place_turn(place).channel_id
        changed = {r.key for r in await other.adapter.list_memories(
            MemoryFilter(channel_id=channel))}
        result = await admin_op("clear_channel", channel_id=channel)(other, clock)
        for text in texts:
            clock.advance(ms=1)
            await record_op(place, text)(other, clock)
        changed |= {r.key for r in await other.adapter.list_memories(
            MemoryFilter(channel_id=channel))}
        for key in stm.engine.heard(ChangeNotice(origin="other", keys=tuple(changed))):
            await stm.engine.reread(key)
        return result
    run.__qualname__ = f"remote-rewrite{place}{list(texts)!r}"
    return run


def clock_op(boundary: int, delta: int) -> Op:
    """Move the clock onto a boundary counted from now (a row written now
    reaches it then), off by ``delta`` ms."""
    async def run(stm: Stm, clock: ManualClock) -> object:
        clock.advance(ms=max(0, boundary + delta))
        return None
    run.__qualname__ = f"clock+{boundary}{delta:+d}"
    return run


def import_op(target: str, origin: str) -> Op:
    """An import of a server's exported configuration (what an operator copies
    between servers, or restores onto the same one)."""
    async def run(stm: Stm, clock: ManualClock) -> object:
        document = await stm.admin.export_config(origin)
        try:
            return await stm.admin.import_config(target, document)
        except StmError as exc:
            return exc
    run.__qualname__ = f"import {origin}->{target}"
    return run


admin_ops = st.one_of(
    st.builds(lambda s, c: admin_op("set_server_params", server_id=s, refresh_cadence=c),
              servers, st.integers(1, 4)),
    st.builds(lambda s, m: admin_op("set_server_params", server_id=s, render_mode=m),
              servers, st.sampled_from(("crude_summary", "supersede"))),
    st.builds(lambda s, n: admin_op("set_server_params", server_id=s, crude_message_count=n),
              servers, st.integers(0, 3)),
    st.builds(lambda s: admin_op("reset_server_params", server_id=s), servers),
    st.builds(lambda s, lines: admin_op("set_categories", server_id=s, lines=lines), servers,
              st.sampled_from((["mood: how it feels", "plan: what comes next"],
                               ["summary: what happened"]))),
    st.builds(lambda s: admin_op("reset_categories", server_id=s), servers),
    st.builds(lambda s, on: admin_op("set_stm_enabled", server_id=s, enabled=on),
              servers, st.booleans()),
    st.builds(lambda s, chans: admin_op("set_private_channels", server_id=s,
                                        channel_ids=chans),
              servers, st.sampled_from(((), ("c2",), ("c1",)))),
    st.builds(lambda s, on: admin_op("set_privacy_bypass", server_id=s, bypass=on),
              servers, st.booleans()),
    st.builds(lambda u, on: admin_op("set_user_opt_in", user_id=u, opt_in=on),
              st.sampled_from(USERS), st.booleans()),
    st.builds(lambda s, d: admin_op("set_prompts", server_id=s, nudge=d),
              servers, st.sampled_from(("Refresh {bot}'s memory.", "Update it."))),
    st.builds(lambda s: admin_op("reset_prompts", server_id=s), servers),
    st.builds(lambda c: admin_op("clear_channel", channel_id=c), st.sampled_from(CHANNELS)),
    st.builds(lambda u: admin_op("clear_user", user_id=u), st.sampled_from(USERS)),
    st.builds(lambda u: admin_op("forget_user", user_id=u), st.sampled_from(USERS)),
    st.builds(lambda s, c, p, text: admin_op("edit_memory", server_id=s, channel_id=c,
                                             persona_id=PERSONAS[p][0], summary=text),
              servers, st.sampled_from(CHANNELS), st.integers(0, 1), texts),
    st.builds(lambda s, c, p: admin_op("undo_memory", server_id=s, channel_id=c,
                                       persona_id=PERSONAS[p][0]),
              servers, st.sampled_from(CHANNELS), st.integers(0, 1)),
    st.builds(lambda s, c, p, r: admin_op("restore_memory", server_id=s, channel_id=c,
                                          persona_id=PERSONAS[p][0], rev=r),
              servers, st.sampled_from(CHANNELS), st.integers(0, 1), st.integers(1, 3)),
    st.builds(lambda target, origin: import_op(target, origin), servers, servers),
)


def _weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of ``choices``, each as often as its weight says (``st.one_of``
    flattens nested choices into one uniform pick, so an admin call with 19
    kinds would drown the rest)."""
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(pool) - 1).flatmap(pool.__getitem__)


turns = st.builds(record_op, places, texts)
tools = st.builds(tool_op, places, texts, st.booleans())
writes = _weighted((3, turns), (2, tools), (3, admin_ops))
#: Turns on a few busy places, so that concurrent steps meet on one row.
busy_places = st.tuples(st.just("g1"), st.sampled_from(("c1", "c2")), st.integers(0, 1),
                        st.just("u1"))
busy_turns = st.builds(record_op, busy_places, texts)
clock_moves = st.one_of(
    st.builds(clock_op, st.sampled_from(BOUNDARIES_MS), st.sampled_from((-1, 0, 1))),
    st.builds(clock_back_op, st.sampled_from((1, 2, 60_000))))
remote_rewrites = st.builds(remote_rewrite_op, places,
                            st.lists(texts, min_size=1, max_size=2))


def _shuffled(ops: list[Op]) -> st.SearchStrategy[list[Op]]:
    return st.permutations(ops)


#: One step: an operation alone, or a few run at once with asyncio.gather
#: (often an admin change beside a turn on a row it touches, in either order).
steps = _weighted(
    (3, writes.map(lambda op: [op])),
    (2, busy_turns.map(lambda op: [op])),
    (1, st.just([janitor_op()])),
    (2, clock_moves.map(lambda op: [op])),
    (2, st.lists(writes, min_size=2, max_size=3)),
    (2, st.tuples(admin_ops, busy_turns).map(list).flatmap(_shuffled)),
    (2, remote_rewrites.map(lambda op: [op])),
)


async def run_step(stm: Stm, clock: ManualClock, step: Sequence[Op]) -> None:
    if len(step) == 1:
        await step[0](stm, clock)
    else:
        await asyncio.gather(*(op(stm, clock) for op in step))


def describe(step: Sequence[Op]) -> str:
    return " | ".join(op.__qualname__ for op in step)
