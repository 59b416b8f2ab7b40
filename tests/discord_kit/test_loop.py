"""The message loop under the real discord.py client: memory written through
the tool and shown the next turn, threads, DMs, splitting, failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stm_discord import open_store
from stm_discord.loop import FAILURE_REPLY
from stm_discord.replies import MESSAGE_LIMIT
from stm_discord.testing.scripted_model import LONG_REPLY, ScriptedModel
from stm_discord.testing.world import (
    ALICE,
    BOB,
    BOT,
    DM,
    GENERAL,
    PLANS,
    SECRETS,
    Running,
    fake_discord,
    running_bot,
)
from tests.discord_kit.support import ask, stored_lines


@pytest.fixture
def kit_db_url(db_url: str) -> str:
    """The loop on a SQLite file and on PostgreSQL."""
    return db_url


def prompt_text(model: ScriptedModel) -> str:
    return "\n".join(str(m.get("content")) for m in model.requests[-1]["messages"])


async def test_memory_written_by_the_tool_shows_on_the_next_turns(
        run: Running, model: ScriptedModel) -> None:
    assert await ask(run, GENERAL.id, ALICE, "please remember Alice paints teal skies", 1) \
        == "Noted: Alice paints teal skies"
    tools = model.requests[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["update_short_term_memory"]
    reply = await ask(run, GENERAL.id, BOB, "what do you know?", 2)
    assert reply == "I hear you, Bob. I remember: Alice paints teal skies"
    assert "short term memory" in prompt_text(model)
    # A third turn still shows it, and the dialogue reads mentions as names.
    await ask(run, GENERAL.id, ALICE, "and now?", 3)
    assert "Alice paints teal skies" in prompt_text(model)
    assert "<@99>" not in prompt_text(model)
    assert prompt_text(model).endswith("Alice: Tomori and now?")


async def test_every_stored_line_carries_its_author(run: Running) -> None:
    await ask(run, GENERAL.id, ALICE, "hi", 1)
    await ask(run, GENERAL.id, BOB, "hello too", 2)
    await stored_lines(run, GENERAL.id, count=4)
    snap = await run.stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                           server_id="7")
    lines = [(m.role, m.speaker_name, m.author_id) for m in snap.messages]
    assert ("user", "Alice", "42") in lines and ("user", "Bob", "43") in lines
    assert all(author for role, _, author in lines if role == "user")
    assert ("model", "Tomori", None) in [(r, s, None) for r, s, _ in lines]


async def test_a_thread_inherits_its_parents_privacy(run: Running, model: ScriptedModel) -> None:
    await ask(run, PLANS.id, ALICE, "remember the surprise party is on Friday", 1)
    # Not private: another channel's prompt shows the thread's memory...
    await ask(run, GENERAL.id, BOB, "anything new?", 1)
    assert "surprise party" in prompt_text(model)
    # ...and once the thread's parent is private, it no longer does.
    await run.stm.admin.set_private_channels("7", channel_ids=[str(SECRETS.id)])
    await ask(run, GENERAL.id, BOB, "anything new now?", 2)
    assert "surprise party" not in prompt_text(model)
    # The thread itself still remembers.
    assert "surprise party" in await ask(run, PLANS.id, ALICE, "what was planned?", 2)


async def test_a_dm_keeps_its_own_memory(run: Running) -> None:
    assert await ask(run, DM, BOB, "remember I like pastels", 1) == "Noted: I like pastels"
    assert await ask(run, DM, BOB, "so?", 2) == "I hear you, Bob. I remember: I like pastels"
    snap = await run.stm.admin.view_memory(channel_id=str(DM), persona_id="1", user_id="43")
    assert snap.scope == "dm" and snap.text == "I like pastels"
    # Not the guild's: the general channel has no such memory.
    guild = await run.stm.admin.view_memory(channel_id=str(DM), persona_id="1", server_id="7")
    assert guild.is_empty


async def test_a_long_reply_is_split_within_discords_limit(run: Running) -> None:
    await run.fake.say(GENERAL.id, ALICE, "<@99> say something long", mentions=[BOT])
    parts = await run.fake.messages_in(GENERAL.id, 3)
    assert all(len(p.content) <= MESSAGE_LIMIT for p in parts)
    assert " ".join(p.content for p in parts) == LONG_REPLY


async def test_when_the_model_fails_the_bot_says_so_and_keeps_the_turn(
        run: Running, model: ScriptedModel) -> None:
    model.fail_next = 1
    assert await ask(run, GENERAL.id, ALICE, "hello?", 1) == FAILURE_REPLY
    assert await stored_lines(run, GENERAL.id, count=2) == ["<@99> hello?", FAILURE_REPLY]
    # The next turn goes on as usual.
    assert await ask(run, GENERAL.id, ALICE, "remember the kiln is hot", 2) \
        == "Noted: the kiln is hot"


async def test_when_discord_refuses_the_reply_the_turn_is_kept(run: Running) -> None:
    run.fake.fail_sends.append(403)
    await run.fake.say(GENERAL.id, ALICE, "<@99> remember the easel is broken",
                       mentions=[BOT])
    failed = await run.fake.wait_for(lambda s: s.kind == "failed")
    assert failed.body["content"] == "Noted: the easel is broken"
    # Recorded all the same: the user's line and the reply the model gave...
    lines = await stored_lines(run, GENERAL.id, count=2)
    assert lines == ["<@99> remember the easel is broken", "Noted: the easel is broken"]
    # ...and the memory the model wrote shows on the next turn.
    reply = await ask(run, GENERAL.id, BOB, "news?", 1)
    assert reply == "I hear you, Bob. I remember: the easel is broken"


async def test_the_bot_answers_only_when_addressed(run: Running) -> None:
    await run.fake.say(GENERAL.id, ALICE, "just chatting")
    await ask(run, GENERAL.id, ALICE, "hi", 1)
    assert [s.content for s in run.fake.sent if s.kind == "message"] == ["I hear you, Alice."]


async def test_a_model_that_never_answers_times_out_into_the_failure_reply(
        tmp_path: Path) -> None:
    model = ScriptedModel()
    model.held = True  # never released: a network that never answers
    async with fake_discord() as fake, \
            open_store(f"sqlite+aiosqlite:///{tmp_path / 'h.db'}", load_entrypoints=False) \
            as stm, running_bot(fake, stm, model.router(), model_timeout=0.3) as run:
        assert await ask(run, GENERAL.id, ALICE, "are you there?", 1) == FAILURE_REPLY
        assert await stored_lines(run, GENERAL.id, count=2) == [
            "<@99> are you there?", FAILURE_REPLY]


async def test_a_store_closed_mid_turn_loses_no_line_after_a_restart(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The bot shuts its store while the model is thinking: the reply still
    goes out, recording fails and is logged; the bot restarted on the same
    database records the lost turn's lines with its next turn's window."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'r.db'}"
    model = ScriptedModel()
    async with fake_discord() as fake:
        async with open_store(url, load_entrypoints=False) as stm, \
                running_bot(fake, stm, model.router()):
            model.held = True
            await fake.say(GENERAL.id, ALICE, "<@99> the kiln is at 900 degrees",
                           mentions=[BOT])
            await asyncio.wait_for(model.arrived.wait(), 10)
            await stm.aclose()
            model.released.set()
            [reply] = await fake.messages_in(GENERAL.id, 1)
            assert reply.content == "I hear you, Alice."
            for _ in range(1000):
                if "recording the turn failed" in caplog.text:
                    break
                await asyncio.sleep(0.01)
            assert "recording the turn failed in channel 1001" in caplog.text
        model.held = False
        await fake.disconnect_all()
        async with open_store(url, load_entrypoints=False) as stm, \
                running_bot(fake, stm, model.router()) as run:
            assert await stm.admin.view_memory(channel_id=str(GENERAL.id), persona_id="1",
                                               server_id="7") is not None
            await ask(run, GENERAL.id, BOB, "what did Alice say?", 2)
            lines = await stored_lines(run, GENERAL.id, count=4)
    assert lines == ["<@99> the kiln is at 900 degrees", "I hear you, Alice.",
                     "<@99> what did Alice say?", "I hear you, Bob."]


async def test_a_reply_never_pings_everyone_or_a_role(run: Running) -> None:
    await run.fake.say(GENERAL.id, ALICE, "<@99> echo @everyone look at <@43>", mentions=[BOT])
    [sent] = await run.fake.messages_in(GENERAL.id, 1)
    assert sent.content == "@everyone look at <@43>"
    assert sent.body["allowed_mentions"] == {"parse": ["users"]}


async def test_when_discord_refuses_the_history_the_kept_lines_stand_in(
        run: Running, model: ScriptedModel) -> None:
    await ask(run, GENERAL.id, BOB, "hi", 1)
    await stored_lines(run, GENERAL.id, count=2)  # recording follows the reply
    run.fake.fail_reads.append(403)
    assert await ask(run, GENERAL.id, ALICE, "remember the door code is 42", 2) \
        == "Noted: the door code is 42"
    # The lines stm kept stand in for the history: the model sees them, and
    # recording the turn keeps them.
    assert [m["content"] for m in model.requests[-2]["messages"]] == [
        "Bob: Tomori hi", "I hear you, Bob.", "Alice: Tomori remember the door code is 42"]
    assert await stored_lines(run, GENERAL.id, count=4) == [
        "<@99> hi", "I hear you, Bob.", "<@99> remember the door code is 42",
        "Noted: the door code is 42"]
