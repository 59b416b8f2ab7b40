"""``stm user forget`` says what it removes, and removes the memory that names
the user; ``stm user export`` shows it, marked, with readable dates."""

from __future__ import annotations

from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.store import open_store

from .conftest import RunStm, ok

G = "7"


async def alice_is_summarised(url: str) -> None:
    """The README's conversation: the model's summary names Alice; an
    operator's edit names her too (kept as a revision)."""
    async with open_store(url, load_entrypoints=False) as stm:
        turn = Turn(user_id="42", channel_id="1001", server_id=G, persona_id="1",
                    triggerer_name="Alice", provider="openai")
        assert (await stm.apply_tool_call(turn, {"summary": "Alice wants a teal sky."})).ok
        await stm.record_turn(turn, [HistoryMessage(
            author_type="user", content="Shall we paint the sky teal?", speaker_name="Alice",
            author_id="42", is_trigger=True)], [PersonaResponse(
                content="Teal it is!", persona_name="Tomori", persona_id="1")])
        await stm.admin.edit_memory(channel_id="1001", server_id=G, persona_id="1",
                                    summary="Alice paints a mural.")


def test_the_help_says_what_is_removed_and_what_is_not(stm_raw: RunStm) -> None:
    text = " ".join(ok(stm_raw("user", "forget", "--help")).stdout.split())
    assert "everything" not in text
    for said in ("names them", "revision", "Not removed", "without an author id",
                 "<@id>", "settings"):
        assert said in text, said


async def test_forget_clears_the_summaries_that_name_the_user(
        stm_raw: RunStm, db_url: str) -> None:
    await alice_is_summarised(db_url)
    exported = ok(stm_raw("--db", db_url, "user", "export", "42")).json()
    assert exported["exported_at"].endswith("Z")
    [own] = exported["own_rows"]
    assert own["updated_at"].startswith("20") and own["messages"][0]["time"].endswith("Z")
    [mention] = exported["mentions"]
    assert mention["summary"] == "Alice paints a mural."
    assert {r["summary"] for r in mention["revisions"]} == {"Alice wants a teal sky.",
                                                            "Alice paints a mural."}

    done = ok(stm_raw("--db", db_url, "--json", "user", "forget", "42", "--yes")).json()
    assert done["mentions"]["action"] == "cleared"
    assert done["mentions"]["searched_for"]["names"] == ["Alice"]
    assert [k["scope_kind"] for k in done["mentions"]["memories_cleared"]] == ["server"]
    history = ok(stm_raw("--db", db_url, "--json", "memory", "history", "--server", G,
                         "--channel", "1001", "--persona", "1")).json()
    assert "Alice" not in str(history)

    again = ok(stm_raw("--db", db_url, "user", "forget", "42", "--yes"))
    said = " ".join(again.stdout.split())
    assert "Cleared 0 memories that name them" in said
    assert "searched for 42, <@42>, <@!42>" in said
    named = ok(stm_raw("--db", db_url, "user", "forget", "42", "--name", "Alice",
                       "--dry-run"))
    assert "searched for Alice, 42, <@42>, <@!42>" in " ".join(named.stdout.split())
