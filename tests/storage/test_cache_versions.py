"""Every cache change is versioned: a change that finishes late never undoes
a newer one.

A caller takes a change mark before its database call and hands it with what
the call committed or read. These tests drive the cache as concurrent
callers do: each operation starts (takes its mark), commits at the database
and is mirrored into the cache, and the three steps of several operations
interleave in every order hypothesis finds. The database is a dict whose
writes follow the real adapters' rules (a row's ``rev`` grows while it
lives and restarts at 1 when it is written again after a delete).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from stm_core.engine.cache import ChangeMarks, MemoryCache, UserView
from stm_core.storage.records import MemoryKey, MemoryRecord, ServerSettings, UserPrefs

G = "g"
KEYS = (MemoryKey.server(G, "c1", None), MemoryKey.server(G, "c2", None))
KINDS = ("write", "bump", "delete", "purge", "load", "probe")


def row(key: MemoryKey, rev: int, at: int, text: str = "x") -> MemoryRecord:
    return MemoryRecord(key=key, summary=text, rev=rev, updated_at_ms=at)


@attrs.define
class Op:
    """One caller's operation: what it does at each of its three steps."""

    kind: str
    key: MemoryKey
    since: int = 0
    epoch: int = 0
    result: Any = None
    cutoff: int = 0


class World:
    """A database of one server's rows and the cache of a long-lived store."""

    def __init__(self) -> None:
        self.db: dict[MemoryKey, MemoryRecord] = {}
        self.cache = MemoryCache(max_servers=4, max_users=4)
        self.cache.servers.install(G, self.cache.new_view([]))
        self.time = 0

    def start(self, op: Op) -> None:
        op.since = self.cache.mark()
        op.epoch = self.cache.epoch
        op.cutoff = self.time
        if op.kind == "load":
            self.cache.begin_load("server", G)

    def commit(self, op: Op) -> None:
        self.time += 1
        old = self.db.get(op.key)
        if op.kind == "write":
            self.db[op.key] = row(op.key, old.rev + 1 if old else 1, self.time, f"t{self.time}")
            op.result = self.db[op.key]
        elif op.kind == "bump":  # a counter bump keeps the row's time
            at = old.updated_at_ms if old else self.time
            self.db[op.key] = row(op.key, old.rev + 1 if old else 1, at, f"b{self.time}")
            op.result = self.db[op.key]
        elif op.kind == "delete":
            op.result = [op.key] if self.db.pop(op.key, None) is not None else []
        elif op.kind == "purge":
            for key in [k for k, r in self.db.items() if r.updated_at_ms < op.cutoff]:
                del self.db[key]
        else:  # load, probe: a read
            op.result = dict(self.db)

    def mirror(self, op: Op) -> None:
        cache = self.cache
        if op.kind in ("write", "bump"):
            cache.apply([op.result], op.since)
        elif op.kind == "delete":
            cache.forget_rows(op.result, op.since)
        elif op.kind == "purge":
            cache.forget_older_than(op.cutoff, op.since)
        elif op.kind == "probe":
            found = op.result.get(op.key)
            if found is None:
                cache.note_absent(op.key)
            else:
                cache.apply([found], op.since)
        else:
            view = cache.new_view(op.result.values())
            cache.end_load("server", G, view)
            if cache.epoch == op.epoch:
                cache.servers.install(G, view)

    def problems(self) -> list[str]:
        view = self.cache.servers.peek(G)
        if view is None:
            return []  # dropped: the next read loads what the database holds
        found = [f"{key}: cached {view.records.get(key)}, stored {self.db.get(key)}"
                 for key in KEYS if view.records.get(key) != self.db.get(key)]
        found += [f"{key} noted absent but stored" for key in KEYS
                  if key in view.absent and key in self.db]
        return found


def run(ops: list[Op], schedule: list[int]) -> World:
    world = World()
    steps: list[Callable[[Op], None]] = [world.start, world.commit, world.mirror]
    taken = [0] * len(ops)
    for index in schedule:
        steps[taken[index]](ops[index])
        taken[index] += 1
    return world


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[Op], list[int]]:
    seeded = draw(st.lists(st.sampled_from(KEYS), max_size=2))
    ops = [Op("write", key) for key in seeded]
    ops += draw(st.lists(st.builds(Op, st.sampled_from(KINDS), st.sampled_from(KEYS)),
                         min_size=1, max_size=5))
    # Loads of one view are single-flight: never two at once.
    loads = [op for op in ops if op.kind == "load"]
    for op in loads[1:]:
        op.kind = "probe"
    # The seeding writes run one after another, first; the rest interleave.
    tail = [i for i in range(len(seeded), len(ops)) for _ in range(3)]
    schedule = [i for i in range(len(seeded)) for _ in range(3)]
    return ops, schedule + draw(st.permutations(tail))


@settings(max_examples=600, deadline=None)
@given(programs())
def test_interleaved_changes_leave_the_cache_equal_to_the_database(
        program: tuple[list[Op], list[int]]) -> None:
    ops, schedule = program
    assert run(ops, schedule).problems() == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(Op, st.sampled_from(KINDS), st.sampled_from(KEYS)),
                min_size=1, max_size=6))
def test_changes_one_after_another_keep_the_view(ops: list[Op]) -> None:
    """Without overlap every change can be ordered: the view is never dropped."""
    world = run(ops, [i for i in range(len(ops)) for _ in range(3)])
    assert world.cache.servers.peek(G) is not None
    assert world.problems() == []


def cached(cache: MemoryCache, *rows: MemoryRecord) -> None:
    since = cache.mark()
    for record in rows:
        if cache.servers.peek(record.key.server_id) is None:
            cache.servers.install(record.key.server_id, cache.new_view([]))
    cache.apply(rows, since)


def test_an_older_delete_never_drops_a_newer_row_nor_marks_it_absent() -> None:
    """The race of an admin delete gathered with a turn: the delete began
    first, the turn's row (written anew, rev 1) was mirrored before it."""
    cache = MemoryCache(max_servers=4, max_users=4)
    key = KEYS[0]
    cached(cache, row(key, 7, 1, "old"))
    delete_began = cache.mark()
    cache.apply([row(key, 1, 2, "written after the delete")], cache.mark())
    cache.forget_rows([key], delete_began)
    view = cache.servers.peek(G)
    assert view is None or (view.records[key].summary == "written after the delete"
                            and key not in view.absent)


def test_a_delete_drops_the_rows_mirrored_before_it_began() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cached(cache, row(KEYS[0], 3, 1), row(KEYS[1], 1, 1))
    cache.forget_rows([KEYS[0]], cache.mark())
    view = cache.servers.peek(G)
    assert view is not None
    assert KEYS[0] not in view.records and KEYS[0] in view.absent
    assert KEYS[1] in view.records


def test_a_row_whose_write_began_before_a_delete_was_mirrored_is_not_installed() -> None:
    """It may have committed before the delete: the view reloads instead."""
    cache = MemoryCache(max_servers=4, max_users=4)
    cached(cache, row(KEYS[1], 1, 1))
    write_began = cache.mark()
    cache.forget_rows([KEYS[0]], cache.mark())
    cache.apply([row(KEYS[0], 4, 2)], write_began)
    assert cache.servers.peek(G) is None


def test_a_view_made_after_a_delete_refuses_rows_written_before_it() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    write_began = cache.mark()
    cache.forget_rows([KEYS[0]], cache.mark())  # nothing cached for the server then
    cache.servers.install(G, cache.new_view([]))
    cache.apply([row(KEYS[0], 4, 2)], write_began)
    assert cache.servers.peek(G) is None


def test_a_purge_keeps_rows_mirrored_while_it_ran_only_by_dropping_their_view() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cached(cache, row(KEYS[1], 1, 50))
    purge_began = cache.mark()
    cache.apply([row(KEYS[0], 2, 5)], cache.mark())  # a counter bump of an old row
    cache.forget_older_than(10, purge_began)
    assert cache.servers.peek(G) is None


def test_a_bump_that_began_before_a_purge_cannot_bring_back_a_purged_row() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cached(cache, row(KEYS[1], 1, 50))
    bump_began = cache.mark()
    cache.forget_older_than(10, cache.mark())
    cache.apply([row(KEYS[0], 2, 5)], bump_began)
    view = cache.servers.peek(G)
    assert view is None or KEYS[0] not in view.records
    fresh_began = cache.mark()
    cached(cache, row(KEYS[1], 2, 60))
    cache.apply([row(KEYS[0], 1, 70)], fresh_began)  # written after the purge
    view = cache.servers.peek(G)
    assert view is not None and view.records[KEYS[0]].rev == 1


def test_a_probe_that_found_nothing_keeps_a_row_written_meanwhile() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cached(cache, row(KEYS[1], 1, 1))
    cache.mark()  # the probe's read begins
    cache.apply([row(KEYS[0], 1, 2)], cache.mark())
    cache.note_absent(KEYS[0])
    view = cache.servers.peek(G)
    assert view is not None and KEYS[0] in view.records and KEYS[0] not in view.absent


def test_settings_read_before_a_newer_write_was_mirrored_are_not_installed() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    read_began = cache.mark()
    cache.put_settings(ServerSettings(server_id=G, refresh_cadence=9), cache.mark())
    cache.put_settings(ServerSettings(server_id=G, refresh_cadence=3), read_began)
    assert cache.settings.peek(G) is None  # reloads: which is newer is unknown
    cache.put_settings(ServerSettings(server_id=G, refresh_cadence=9), cache.mark())
    stored = cache.settings.peek(G)
    assert stored is not None and stored.refresh_cadence == 9


def test_preferences_follow_the_same_rule() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    cache.users.install("u", UserView(UserPrefs(user_id="u"), cache.new_view([])))
    read_began = cache.mark()
    cache.put_prefs(UserPrefs(user_id="u", crossserver_opt_in=True), cache.mark())
    cache.put_prefs(UserPrefs(user_id="u", crossserver_opt_in=False), read_began)
    assert cache.users.peek("u") is None
    assert cache.prefs_marks.changed_since("u", read_began)


def test_nothing_read_before_a_clear_is_installed_after_it() -> None:
    cache = MemoryCache(max_servers=4, max_users=4)
    read_began = cache.mark()
    cache.drop_all()
    cache.put_settings(ServerSettings(server_id=G), read_began)
    assert cache.settings.peek(G) is None
    cache.servers.install(G, cache.new_view([]))
    cache.apply([row(KEYS[0], 1, 1)], read_began)
    assert cache.servers.peek(G) is None


def test_change_marks_stay_bounded_and_forget_by_counting_everything_as_changed() -> None:
    marks = ChangeMarks(maxsize=3)
    for mark, ident in enumerate("abcd", start=1):
        marks.note_change(ident, mark)
    assert len(marks._marks) <= 3
    assert marks.changed_since("a", 3)  # forgotten: counts as changed at the floor
    assert not marks.changed_since("zz", 4)
