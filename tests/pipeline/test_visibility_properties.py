"""Property: whatever the servers, channels, threads, personas and opt-ins,
private memories never leak into public channels, DM memories never reach a
server, and another server's memories appear only with the user's opt-in and
only from its public channels. With no cap in the way, exactly the memories an
independent model of the rules allows are shown."""

from __future__ import annotations

import asyncio

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.plugins import create_plugin_manager
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.store import Stm, open_store

from .support import set_opt_in, set_settings

USER = "alice"
CURRENT = "G"
PERSONAS = (None, "p1", "p2")
LINEAGES = (None, "L1", "L2")

PM = create_plugin_manager(load_entrypoints=False)


@attrs.frozen
class Row:
    key: MemoryKey
    lineage: str | None
    parent: str | None

    @property
    def marker(self) -> str:
        k = self.key
        return f"MARK[{k.scope_kind}|{k.user_id}|{k.server_id}|{k.channel_id}|{k.persona_id}]"


@attrs.frozen
class Server:
    id: str
    channels: tuple[str, ...]
    #: thread id -> parent channel id
    threads: dict[str, str]
    private: frozenset[str]
    bypass: bool

    def parent(self, channel: str) -> str | None:
        return self.threads.get(channel)

    def is_private(self, channel: str) -> bool:
        parent = self.parent(channel)
        return channel in self.private or (parent is not None and parent in self.private)

    @property
    def places(self) -> tuple[str, ...]:
        return self.channels + tuple(self.threads)


@attrs.frozen
class World:
    servers: tuple[Server, ...]
    dm_channels: tuple[str, ...]
    rows: tuple[Row, ...]
    opt_in: bool
    cap: int


@st.composite
def servers(draw: st.DrawFn, server_id: str) -> Server:
    channels = tuple(f"{server_id}-c{i}" for i in range(draw(st.integers(1, 4))))
    threads = {f"{server_id}-t{i}": draw(st.sampled_from(channels))
               for i in range(draw(st.integers(0, 3)))}
    private = frozenset(draw(st.sets(st.sampled_from(channels))))
    return Server(id=server_id, channels=channels, threads=threads, private=private,
                  bypass=draw(st.booleans()))


@st.composite
def worlds(draw: st.DrawFn) -> World:
    all_servers = (draw(servers(CURRENT)),
                   *(draw(servers(f"H{i}")) for i in range(draw(st.integers(0, 2)))))
    dm_channels = tuple(f"dm{i}" for i in range(draw(st.integers(1, 3))))
    rows: list[Row] = []

    def add(key: MemoryKey, parent: str | None) -> None:
        rows.append(Row(key=key, lineage=draw(st.sampled_from(LINEAGES)), parent=parent))

    for server in all_servers:
        for place in server.places:
            for persona in draw(st.sets(st.sampled_from(PERSONAS), min_size=1, max_size=2)):
                parent = server.parent(place)
                add(MemoryKey.server(server.id, place, persona), parent)
                for user in (USER, "bob"):
                    if draw(st.booleans()):
                        add(MemoryKey.user(user, place, persona, server.id), parent)
    for channel in dm_channels:
        for user in (USER, "bob"):
            if draw(st.booleans()):
                add(MemoryKey.user(user, channel, draw(st.sampled_from(PERSONAS)), None), None)
    return World(servers=all_servers, dm_channels=dm_channels, rows=tuple(rows),
                 opt_in=draw(st.booleans()), cap=draw(st.sampled_from((3, 1000))))


def allowed(world: World, turn: Turn, row: Row) -> bool:
    """The rules, restated independently of the pipeline."""
    key = row.key
    by_id = {s.id: s for s in world.servers}
    if key.channel_id == turn.channel_id:
        return False
    if turn.persona_lineage_id and row.lineage != turn.persona_lineage_id:
        return False
    origin = by_id.get(key.server_id)  # None: a DM row
    if turn.server_id is None:  # a DM turn: the user's own rows only
        if key.scope_kind != "user" or key.user_id != USER:
            return False
        return origin is None or (world.opt_in and not origin.is_private(key.channel_id))
    current = by_id[turn.server_id]
    if key.scope_kind == "server":
        if key.server_id != turn.server_id:
            return False
        here_private = turn.channel_id in current.private or (
            turn.parent_channel_id is not None and turn.parent_channel_id in current.private)
        return current.bypass or here_private or not current.is_private(key.channel_id)
    return (key.user_id == USER and world.opt_in and origin is not None
            and origin.id != turn.server_id and not origin.is_private(key.channel_id))


async def scenario(world: World, lineage: str | None) -> int:
    """Build every turn of the world's current server and a DM turn, check each;
    returns how many turns were checked."""
    clock = ManualClock()
    async with open_store("memory://", plugin_manager=PM, clock=clock,
                          settings=Settings(max_other_channels=world.cap)) as stm:
        await populate(stm, world)
        current = world.servers[0]
        turns = [Turn(user_id=USER, channel_id=place, server_id=CURRENT,
                      parent_channel_id=current.parent(place), persona_lineage_id=lineage,
                      has_tools=False)
                 for place in current.places]
        turns.append(Turn(user_id=USER, channel_id="dm-now", persona_lineage_id=lineage,
                          has_tools=False))
        for turn in turns:
            ctx = await stm.build_context(turn)
            text = ctx.memory_items[0].text if ctx.memory_items else ""
            shown = {row for row in world.rows if row.marker in text}
            check(world, current, turn, shown)
        return len(turns)


def check(world: World, current: Server, turn: Turn, shown: set[Row]) -> None:
    for row in shown:
        key = row.key
        lineage = turn.persona_lineage_id
        assert not lineage or row.lineage == lineage, f"lineage {lineage} saw {row.marker}"
        if turn.server_id is not None:
            assert key.server_id != "", f"DM memory {row.marker} shown in a server"
            here_private = current.is_private(turn.channel_id)
            if key.server_id == CURRENT and not current.bypass and not here_private:
                assert not current.is_private(key.channel_id), \
                    f"private {row.marker} shown in public {turn.channel_id}"
        if key.server_id not in ("", turn.server_id or ""):
            origin = next(s for s in world.servers if s.id == key.server_id)
            assert world.opt_in, f"{row.marker} shown without opt-in"
            assert not origin.is_private(key.channel_id), \
                f"{row.marker} shown from another server's private channel"
    expected = {row for row in world.rows if allowed(world, turn, row)}
    assert shown <= expected
    if world.cap >= len(world.rows):
        assert shown == expected
    else:
        assert len(shown) == min(world.cap, len(expected))


async def populate(stm: Stm, world: World) -> None:
    for server in world.servers:
        await set_settings(stm, server.id, private_channel_ids=server.private,
                           privacy_bypass=server.bypass)
    await set_opt_in(stm, USER, world.opt_in)
    now = stm.clock.now_ms()
    await stm.engine.write_memory([
        MemoryWrite(key=row.key, now_ms=now, set_summary=True, summary=row.marker,
                    persona_lineage_id=row.lineage, parent_channel_id=row.parent)
        for row in world.rows])


@settings(max_examples=300, deadline=None)
@given(world=worlds(), lineage=st.sampled_from((None, "L1")))
def test_visibility_rules_hold_for_any_world(world: World, lineage: str | None) -> None:
    asyncio.run(scenario(world, lineage))
