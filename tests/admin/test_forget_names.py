"""Forget removes the memory that names the user, not only the lines they wrote.

A conversation in which the model's summary names the user (through the
tool), an operator's edit that names them (kept as a revision), category
texts, other people's lines and the persona's replies that name them, and a
mention of their id in a server where they never spoke. After ``forget``,
every table is read directly, on SQLite and on PostgreSQL: nothing that names
them survives, the undo history included. What only looks like their name
("Alicent") and everyone else's words stay.
"""

from __future__ import annotations

import re
import sqlite3
from urllib.parse import parse_qs, urlsplit

import pytest

from stm_core import Actor
from stm_core.admin.mentions import Matcher, SearchTerms, search_terms
from stm_core.errors import ValidationError
from stm_core.models import CrudeMessage, HistoryMessage, PersonaResponse, Turn
from stm_core.storage.records import MemoryFilter, MemoryKey, MemoryRecord
from stm_core.store import Stm
from stm_plugins.sqlalchemy_storage.schema import metadata
from tests.conftest import OpenStm, asyncpg_dsn

ALICE, BOB = "4242", "5151"
G, G2, G3 = "900", "901", "902"
#: Alice as any table could still hold her: her name, her id (mentions included).
NAMES_HER = re.compile(r"(?<!\w)alice(?!\w)|4242", re.IGNORECASE)


def said(user: str, name: str, text: str, *, trigger: bool = False) -> HistoryMessage:
    return HistoryMessage(author_type="user", content=text, speaker_name=name,
                          author_id=user, is_trigger=trigger)


def turn(user: str, server: str, channel: str, name: str) -> Turn:
    return Turn(user_id=user, channel_id=channel, server_id=server, persona_id="p",
                triggerer_name=name, bot_name="Tomori", provider="openai")


async def converse(stm: Stm) -> None:
    # Summary mode in G: the model's summary names Alice; an operator edits it.
    t = turn(ALICE, G, "c1", "Alice")
    assert (await stm.apply_tool_call(t, {"summary": "Alice wants a teal sky."})).ok
    await stm.record_turn(t, [said(ALICE, "Alice", "Shall we paint the sky teal?",
                                   trigger=True)],
                          [PersonaResponse(content="Teal for you, Alice!", persona_name="Tomori",
                                           persona_id="p")])
    await stm.admin.edit_memory(channel_id="c1", server_id=G, persona_id="p",
                                summary="Alice paints a mural.")
    await stm.admin.edit_memory(channel_id="c1", server_id=G, persona_id="p",
                                summary="A mural is being painted.")  # the current text
    # Bob, later, in the same channel: his line names her; the window moved on.
    b = turn(BOB, G, "c1", "Bob")
    await stm.record_turn(b, [said(ALICE, "Alice", "I like teal"),
                              said(BOB, "Bob", "ALICE, the sky is done", trigger=True)],
                          [PersonaResponse(content="Nice work", persona_name="Tomori",
                                           persona_id="p")])
    # Category mode in G2: a category text names her.
    await stm.admin.set_categories(G2, ["Goals: where the party heads",
                                        "People: who is who"])
    c = turn(BOB, G2, "c2", "Bob")
    assert (await stm.apply_tool_call(c, {"goals": "Reach the coast",
                                          "people": "Alice leads the way"})).ok
    await stm.record_turn(c, [said(BOB, "Bob", "onwards", trigger=True)],
                          [PersonaResponse(content="Onwards!", persona_name="Tomori",
                                           persona_id="p")])
    # G4: Alice, a moderator there, edited a memory that does not name her:
    # her id is the revision's actor.
    await stm.admin.edit_memory(channel_id="c4", server_id="903", persona_id="p",
                                summary="The quest starts at dawn.",
                                actor=Actor(user_id=ALICE, can_manage=True))
    # G3, where Alice never spoke: a mention of her id; and a look-alike name.
    m = turn(BOB, G3, "c3", "Bob")
    assert (await stm.apply_tool_call(m, {"summary": "<@4242> owes Bob a song."})).ok
    await stm.record_turn(m, [said(BOB, "Bob", "Alicent sings well", trigger=True)],
                          [PersonaResponse(content="She does", persona_name="Tomori",
                                           persona_id="p")])


async def table_texts(url: str) -> dict[str, list[str]]:
    """Every text value of every stm table, read from the database itself."""
    tables = sorted(metadata.tables)
    found: dict[str, list[str]] = {}
    if url.startswith("sqlite"):
        with sqlite3.connect(url.split("///", 1)[1]) as conn:
            for table in tables:
                found[table] = [str(v) for row in conn.execute(f"SELECT * FROM {table}")
                                for v in row if v is not None]
        return found
    import asyncpg

    schema = parse_qs(urlsplit(url).query)["schema"][0]
    conn = await asyncpg.connect(asyncpg_dsn(url.split("?", 1)[0]))
    try:
        for table in tables:
            rows = await conn.fetch(f'SELECT * FROM "{schema}".{table}')
            found[table] = [str(v) for row in rows for v in row.values() if v is not None]
    finally:
        await conn.close()
    return found


def naming_her(texts: dict[str, list[str]]) -> dict[str, list[str]]:
    return {t: hits for t, values in texts.items()
            if (hits := [v for v in values if NAMES_HER.search(v)])}


async def test_nothing_that_names_the_user_survives_in_any_table(
        open_stm: OpenStm, db_url: str) -> None:
    async with open_stm(db_url) as stm:
        await converse(stm)
        before = naming_her(await table_texts(db_url))
        assert {"stm_memories", "stm_memory_revisions"} <= set(before)
        assert any("Alice paints a mural." in v for v in before["stm_memory_revisions"])

        preview = await stm.admin.forget_user(ALICE, dry_run=True)
        result = await stm.admin.forget_user(ALICE)
        assert result.searched_for is not None
        assert result.searched_for.names == ("Alice",)
        assert set(preview.memories_cleared) == set(result.memories_cleared)
        assert {k.server_id for k in result.memories_cleared} == {G, G2, G3, "903"}
        assert result.mention_lines_removed >= 2  # Bob's line, the persona's reply
        assert result.to_dict()["mentions"]["action"] == "cleared"

        assert naming_her(await table_texts(db_url)) == {}
        # Everyone else's words stay, the look-alike too.
        rest = " ".join(v for values in (await table_texts(db_url)).values() for v in values)
        assert "Alicent sings well" in rest and "onwards" in rest
        # Nothing to undo back to: the history that named her is gone.
        history = await stm.admin.memory_history(channel_id="c1", server_id=G,
                                                 persona_id="p")
        assert all(not NAMES_HER.search(r.text) for r in history.revisions)
        # No build shows her, from the warm cache either.
        for server, channel in ((G, "c1"), (G2, "c2"), (G3, "c3")):
            ctx = await stm.build_context(turn(BOB, server, channel, "Bob"))
            assert not [i.text for i in ctx.memory_items if NAMES_HER.search(i.text)]


async def test_export_marks_the_memory_that_names_the_user(stm: Stm) -> None:
    await converse(stm)
    exported = await stm.admin.export_user(ALICE)
    assert exported["searched_for"]["names"] == ["Alice"]
    by_server = {m["key"]["server_id"]: m for m in exported["mentions"]}
    assert set(by_server) == {G, G2, G3, "903"}
    [edited] = by_server["903"]["revisions"]
    assert (edited["actor"], edited["summary"]) == (ALICE, "The quest starts at dawn.")
    g = next(m for m in exported["mentions"] if m["key"] == {
        "scope_kind": "server", "server_id": G, "user_id": "", "channel_id": "c1",
        "persona_id": "p"})
    assert g["summary"] is None  # the current text does not name her
    assert {r["summary"] for r in g["revisions"]} >= {"Alice wants a teal sky.",
                                                      "Alice paints a mural."}
    assert [m["content"] for m in g["messages"]] == ["ALICE, the sky is done"]
    assert by_server[G2]["categories"] == {"people": "Alice leads the way"}
    assert by_server[G3]["summary"] == "<@4242> owes Bob a song."
    # Her own lines are hers, listed once, not as mentions.
    assert not [m for r in exported["mentions"] for m in r["messages"]
                if m["author_id"] == ALICE]


@pytest.mark.parametrize(("text", "names"), [
    ("Alice wants a teal sky.", True), ("ask ALICE", True), ("alice's idea", True),
    ("Alicent", False), ("malice", False), ("ping <@4242>", True), ("<@!4242>!", True),
    ("id 4242", True), ("42420", False), ("Al", False),
])
def test_the_matching_rule(text: str, names: bool) -> None:
    matcher = Matcher(SearchTerms(user_id=ALICE, names=("Alice",)))
    assert matcher.names(text) is names


def test_short_and_default_names_are_reported_not_searched() -> None:
    lines = tuple(CrudeMessage(role="user", content="x", speaker_name=n, timestamp_ms=0,
                               author_id=ALICE) for n in ("A", "User", "Alice", ALICE))
    terms = search_terms(ALICE, [MemoryRecord(key=MemoryKey.server(G, "c", None),
                                              messages=lines, updated_at_ms=0, rev=1)])
    assert (terms.names, terms.names_not_searched) == (("Alice",), ("A", "User"))
    assert terms.to_dict()["ids"] == [ALICE, f"<@{ALICE}>", f"<@!{ALICE}>"]




async def test_names_the_operator_gives_find_what_stored_lines_no_longer_tell(
        stm: Stm) -> None:
    """After her lines are gone, stm no longer knows her name: a summary
    written later under it is found only with the name given."""
    await converse(stm)
    await stm.admin.forget_user(ALICE)
    late = turn(BOB, G, "c1", "Bob")
    assert (await stm.apply_tool_call(late, {"summary": "Alice came back"})).ok
    assert (await stm.admin.forget_user(ALICE, dry_run=True)).memories_cleared == ()
    exported = await stm.admin.export_user(ALICE, names=["Alice"])
    assert [m["summary"] for m in exported["mentions"]] == ["Alice came back"] * 2
    result = await stm.admin.forget_user(ALICE, names=[" Alice ", "A"])
    assert result.searched_for is not None
    assert (result.searched_for.names, result.searched_for.names_not_searched) == (
        ("Alice",), ("A",))
    assert len(result.memories_cleared) == 2  # the server row and Bob's copy
    assert naming_her({"rows": [str(r.summary) for r in await stm.adapter.list_memories(
        MemoryFilter(server_id=G))]}) == {}


@pytest.mark.parametrize("names", ["Alice", [""], ["  "], ["x" * 101], ["n"] * 21, [5]])
async def test_bad_names_are_refused(stm: Stm, names: object) -> None:
    with pytest.raises(ValidationError):
        await stm.admin.forget_user(ALICE, names=names)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await stm.admin.export_user(ALICE, names=names)  # type: ignore[arg-type]
