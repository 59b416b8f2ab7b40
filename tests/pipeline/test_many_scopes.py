"""Builds in a big server stay off the database at any number of persona
lineages, users with channels of their own hidden, and policies that hide
channels without declaring them.

The server holds many more rows than its view keeps, spread over lineages,
so each lineage's build walks the rows kept for its scope. Builds rotate
over the lineages (and users); after each scope's first read, no build may
read storage, and every build shows what a store whose views hold every row
shows. Counted in reads, not time.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from bench.scenarios_server_mix import READS, count_reads
from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.plugin_types import VisibilityContext, VisibilityPolicy, hides_channels
from stm_core.settings import Settings
from stm_core.storage.records import MemoryRecord, MemoryWrite
from stm_core.store import Stm

from .support import OpenStm, make_turn, other_text, server_key

ROWS = 600
VIEW = 20
CAP = 3
BUILDS = 96
USERS = ("u0", "u1", "u2", "u3", "u4", "u5")


def _rows(now: int, lineages: int) -> list[MemoryWrite]:
    return [MemoryWrite(key=server_key(f"c{n}"), now_ms=now - ROWS + n, set_summary=True,
                        summary=f"plan in c{n}", persona_lineage_id=f"L{n % lineages}")
            for n in range(ROWS)]


def _user_hidden(user: str) -> frozenset[str]:
    """Channels one user may not see: a few of its own among the newest rows."""
    index = USERS.index(user)
    return frozenset(f"c{ROWS - 1 - 6 * k - index}" for k in range(4))


class PerUserHidden:
    """Hides each user's own channels, and declares them."""

    @hookimpl
    def stm_visibility_policies(self) -> Iterable[VisibilityPolicy]:
        @hides_channels(lambda ctx: _user_hidden(ctx.turn.user_id or ""))
        def per_user(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
            return False if entry.key.channel_id in _user_hidden(ctx.turn.user_id or "") else None
        return [per_user]


class UndeclaredHiding:
    """Hides most of the newest channels without declaring them."""

    @hookimpl
    def stm_visibility_policies(self) -> Iterable[VisibilityPolicy]:
        def undeclared(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
            number = int(entry.key.channel_id[1:])
            return False if number >= ROWS - 150 and number % 10 else None
        return [undeclared]


async def _rotate(stm: Stm, lineages: int, users: tuple[str, ...]) -> tuple[int, list[str]]:
    """Warm up every scope once, then ``BUILDS`` builds rotating over the
    lineages and users: the storage reads they made, and what they showed."""
    turns = [make_turn(persona_lineage_id=f"L{n % lineages}", user_id=users[n % len(users)],
                       channel_id="new") for n in range(BUILDS)]
    for turn in turns:
        await stm.build_context(turn)
    reads = count_reads(stm)
    shown = [other_text(await stm.build_context(turn)) or "" for turn in turns]
    return sum(reads.values()), shown


async def _unbounded(open_stm: OpenStm, db_url: str, lineages: int, users: tuple[str, ...],
                     plugin: object | None) -> list[str]:
    async with open_stm(db_url, settings=Settings(max_other_channels=CAP)) as stm:
        if plugin is not None:
            stm.pm.register(plugin, name="test-policy")
        turns = [make_turn(persona_lineage_id=f"L{n % lineages}",
                           user_id=users[n % len(users)], channel_id="new")
                 for n in range(BUILDS)]
        return [other_text(await stm.build_context(turn)) or "" for turn in turns]


CASES = {
    "17-lineages": (17, ("alice",), None),
    "24-lineages": (24, ("alice",), None),
    "per-user-hidden": (24, USERS, PerUserHidden()),
    "undeclared-hiding": (1, ("alice",), UndeclaredHiding()),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_warm_builds_read_nothing_at_many_scopes(
        case: str, open_stm: OpenStm, db_url: str, clock: ManualClock) -> None:
    lineages, users, plugin = CASES[case]
    bounded = Settings(cache_max_rows_per_view=VIEW, max_other_channels=CAP)
    async with open_stm(db_url, settings=bounded) as stm:
        if plugin is not None:
            stm.pm.register(plugin, name="test-policy")
        await stm.engine.write_memory(_rows(clock.now_ms(), lineages))
        reads, shown = await _rotate(stm, lineages, users)
    assert reads == 0, f"{reads} storage reads in {BUILDS} warm builds ({READS})"
    assert all(text.count("plan in") == CAP for text in shown)
    assert shown == await _unbounded(open_stm, db_url, lineages, users, plugin)
