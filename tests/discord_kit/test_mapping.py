"""Discord's objects as stm's, on the messages the real client parsed; the
provider keys as hosts write them; the kit's entry points and hostile values."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest

from hookspecs import hookimpl
from stm_core import Actor, AdminAction, ValidationError
from stm_core.plugins.providers import resolve_provider
from stm_discord import Persona, Router, add_to, open_store
from stm_discord.commands import REFUSED
from stm_discord.mapping import turn_for, window_lines
from stm_discord.model import api_model
from stm_discord.replies import MESSAGE_LIMIT, split_reply
from stm_discord.testing.scripted_model import ScriptedModel
from stm_discord.testing.world import (
    ALICE,
    BOB,
    BOT,
    DM,
    GENERAL,
    PERSONAS,
    PLANS,
    Running,
    fake_discord,
    make_bot,
    running_bot,
)

TOMORI = PERSONAS[0]


def cached(run: Running, content: str) -> discord.Message:
    [found] = [m for m in run.bot.cached_messages if m.content == content]
    return found


async def test_a_thread_message_becomes_a_turn_with_its_parent_and_names(run: Running) -> None:
    await run.fake.say(PLANS.id, ALICE, "<@99> ask <@43> about <#1003> in <#1001>",
                       mentions=[BOT, BOB])
    await run.fake.messages_in(PLANS.id, 1)
    message = cached(run, "<@99> ask <@43> about <#1003> in <#1001>")
    turn = turn_for(message, TOMORI, provider="openai", window=[message])
    assert (turn.server_id, turn.channel_id, turn.parent_channel_id) == ("7", "1003", "1002")
    assert (turn.user_id, turn.triggerer_name, turn.bot_name) == ("42", "Alice", "Tomori")
    assert turn.user_names["43"] == "Bob" and turn.user_names["99"] == "Tomori"
    assert turn.channel_names["1003"] == "plans" and turn.thread_ids == {"1003"}
    assert (turn.server_name, turn.channel_name) == ("Art Club", "plans")


async def test_a_dm_has_no_server(run: Running) -> None:
    await run.fake.say(DM, BOB, "hello there")
    await run.fake.messages_in(DM, 1)
    turn = turn_for(cached(run, "hello there"), TOMORI, provider="openai")
    assert (turn.server_id, turn.channel_id, turn.user_id) == (None, str(DM), "43")
    assert turn.is_dm


async def test_every_line_has_its_author_and_only_the_trigger_is_marked(run: Running) -> None:
    await run.fake.say(GENERAL.id, BOB, "first")
    await run.fake.say(GENERAL.id, ALICE, "<@99> second", mentions=[BOT])
    [reply] = await run.fake.messages_in(GENERAL.id, 1)
    seen = [cached(run, "first"), cached(run, "<@99> second"), cached(run, reply.content)]
    lines = window_lines(seen, bot_user_id=BOT.id, persona=TOMORI, trigger_id=seen[1].id)
    assert [(x.author_type, x.speaker_name, x.author_id, x.is_trigger) for x in lines] == [
        ("user", "Bob", "43", False), ("user", "Alice", "42", True),
        ("persona", "Tomori", "1", False)]


async def test_mentions_in_memory_and_dialogue_read_as_names(
        run: Running, model: ScriptedModel) -> None:
    await run.fake.say(GENERAL.id, ALICE, "<@99> remember <@43> paints in <#1002>",
                       mentions=[BOT, BOB])
    await run.fake.messages_in(GENERAL.id, 1)
    await run.fake.say(GENERAL.id, ALICE, "<@99> and?", mentions=[BOT])
    [_, reply] = await run.fake.messages_in(GENERAL.id, 2)
    assert reply.content == "I hear you, Alice. I remember: Bob paints in the channel named " \
                            "`secrets`"
    assert "<@" not in str(model.requests[-1]["messages"])


async def test_a_reply_to_the_bot_is_answered(run: Running, model: ScriptedModel) -> None:
    await run.fake.say(GENERAL.id, ALICE, "<@99> hi", mentions=[BOT])
    [first] = await run.fake.messages_in(GENERAL.id, 1)
    assert first.message is not None
    reply = run.fake._message(GENERAL.id, BOB, "and me?", extra={
        "message_reference": {"message_id": first.message["id"],
                              "channel_id": str(GENERAL.id), "guild_id": "7"},
        "referenced_message": first.message, "type": 19})
    await run.fake.dispatch("MESSAGE_CREATE", reply)
    answers = await run.fake.messages_in(GENERAL.id, 2)
    assert answers[-1].content == "I hear you, Bob."
    assert model.requests[-1]["messages"][-1]["content"] == \
        "Bob: (replying to Tomori) and me?"


async def test_attachments_are_named_in_the_line(run: Running, model: ScriptedModel) -> None:
    message = run.fake._message(GENERAL.id, ALICE, "<@99> look", mentions=[BOT], extra={
        "attachments": [{"id": "1", "filename": "mural.png", "size": 10, "url": "x",
                         "proxy_url": "x"}]})
    await run.fake.dispatch("MESSAGE_CREATE", message)
    await run.fake.messages_in(GENERAL.id, 1)
    assert model.requests[-1]["messages"][-1]["content"] == \
        "Alice: Tomori look [attachment: mural.png]"


@pytest.mark.parametrize(("key", "family", "sent"), [
    ("openrouter/anthropic/claude-3.5-sonnet", "openrouter", "anthropic/claude-3.5-sonnet"),
    ("anthropic/claude-3-5-sonnet", "anthropic", "anthropic/claude-3-5-sonnet"),
    ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
    ("litellm/gemini-1.5-pro", "litellm", "gemini-1.5-pro"),
])
async def test_provider_keys_as_hosts_write_them(tmp_path: Path, key: str, family: str,
                                                 sent: str) -> None:
    """stm reads the key for its phrasing; the router is sent the model part;
    the tool goes out in the Chat Completions shape the router takes."""
    assert resolve_provider(key).family == family and api_model(key) == sent
    model = ScriptedModel()
    async with fake_discord() as fake, \
            open_store(f"sqlite+aiosqlite:///{tmp_path / 'k.db'}", load_entrypoints=False) \
            as stm, running_bot(fake, stm, model.router(key)):
        await fake.say(GENERAL.id, ALICE, "<@99> remember the key works", mentions=[BOT])
        [reply] = await fake.messages_in(GENERAL.id, 1)
    assert reply.content == "Noted: the key works"
    request = model.requests[0]
    assert request["model"] == sent
    assert request["tools"][0]["type"] == "function"
    assert request["tools"][0]["function"]["name"] == "update_short_term_memory"


def test_split_reply_keeps_every_word_within_the_limit() -> None:
    assert split_reply("") == [] and split_reply("  hi  ") == ["hi"]
    exact = "a" * MESSAGE_LIMIT
    assert split_reply(exact) == [exact]
    assert split_reply("a" * (MESSAGE_LIMIT + 1)) == ["a" * MESSAGE_LIMIT, "a"]
    lines = "\n".join(["line " * 100] * 9)
    parts = split_reply(lines)
    assert all(len(p) <= MESSAGE_LIMIT for p in parts) and len(parts) == 3
    assert " ".join(parts).split() == lines.split()
    assert all(p.endswith("line") for p in parts)  # cut at a line break
    assert split_reply("word " * 500)[0].endswith("word")  # else at a space


class Owners:
    """A host's own policy, answering first: bot owners may do anything, and
    Alice is no longer trusted."""

    @hookimpl(tryfirst=True)
    def stm_admin_permission(self, actor: Actor, action: AdminAction) -> bool | None:
        if actor.user_id == str(BOB.id):
            return True
        if actor.user_id == str(ALICE.id):
            return False
        return None


@pytest.fixture
async def owners_run(tmp_path: Path) -> AsyncIterator[Running]:
    async with fake_discord() as fake, \
            open_store(f"sqlite+aiosqlite:///{tmp_path / 'o.db'}", plugins=[Owners()],
                       load_entrypoints=False) as stm, \
            running_bot(fake, stm, ScriptedModel().router()) as running:
        yield running


async def test_a_host_replaces_the_permission_policy(owners_run: Running) -> None:
    run = owners_run
    bob = await run.fake.slash(GENERAL.id, BOB, "server stm parameters", refresh_cadence=4)
    assert "every 4 turns" in bob.content
    alice = await run.fake.slash(GENERAL.id, ALICE, "server stm parameters", refresh_cadence=9)
    assert alice.content == REFUSED
    assert (await run.stm.admin.server_params("7")).refresh_cadence == 4


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"personas": []}, "personas"),
    ({"personas": ["Tomori"]}, "personas"),
    ({"personas": [Persona(id="1", name="A"), Persona(id=1, name="B")]}, "personas"),
    ({"personas": [Persona(id=n, name="P") for n in range(26)]}, "personas"),
    ({"window": 0}, "window"), ({"window": 101}, "window"), ({"window": "5"}, "window"),
    ({"window": True}, "window"), ({"failure_reply": ""}, "failure_reply"),
    ({"failure_reply": None}, "failure_reply"), ({"model_timeout": 0}, "model_timeout"),
    ({"model_timeout": "5"}, "model_timeout"), ({"model_timeout": 3601}, "model_timeout"),
])
async def test_add_to_refuses_hostile_values(tmp_path: Path, kwargs: dict[str, Any],
                                             field: str) -> None:
    bot = make_bot()
    async with open_store("memory://", load_entrypoints=False) as stm:
        with pytest.raises(ValidationError) as caught:
            await add_to(bot, stm, ScriptedModel().router(), **kwargs)
    assert caught.value.field == field
    assert bot.get_cog("StmChat") is None and bot.get_cog("StmCommands") is None


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"key": ""}, "key"), ({"key": None}, "key"), ({"key": 3}, "key"),
    ({"key": "openai/x", "system": None}, "system"),
    ({"key": "openai/x", "max_tool_rounds": -1}, "max_tool_rounds"),
    ({"key": "openai/x", "max_tool_rounds": 11}, "max_tool_rounds"),
])
def test_router_refuses_hostile_values(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Router(client=ScriptedModel().client(), **kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"id": None, "name": "x"}, "persona.id"), ({"id": " ", "name": "x"}, "persona.id"),
    ({"id": 1.5, "name": "x"}, "persona.id"), ({"id": "1", "name": ""}, "persona.name"),
    ({"id": "1", "name": 5}, "persona.name"),
])
def test_persona_refuses_hostile_values(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Persona(**kwargs)
    assert caught.value.field == field

