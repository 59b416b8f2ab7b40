"""Helpers for pipeline tests: state is set through the storage adapter and the
store's write methods, exactly as a host's writes would reach it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

from stm_core.models import CrudeMessage, StmContext, Turn
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    MemoryKey,
    MemoryRecord,
    MemoryWrite,
    ServerSettings,
)
from stm_core.store import Stm

GUILD = "G"
QUEST = "333"  # the current channel of most tests
GENERAL = "222"
ART = "111"
DUNGEON = "444"
CHANNEL_NAMES = {QUEST: "quest", GENERAL: "general", ART: "art", DUNGEON: "dungeon"}

Line = tuple[Literal["user", "model"], str | None, str]
#: The ``open_stm`` fixture: ``async with open_stm(url) as stm``.
OpenStm = Callable[..., AbstractAsyncContextManager[Stm]]


def make_turn(**overrides: Any) -> Turn:
    """A guild turn in #quest by Alice, talking to Tomori, with tools."""
    values: dict[str, Any] = {
        "user_id": "alice",
        "channel_id": QUEST,
        "server_id": GUILD,
        "bot_name": "Tomori",
        "triggerer_name": "Alice",
        "provider": "openai",
        "has_tools": True,
        "channel_names": CHANNEL_NAMES,
    }
    values.update(overrides)
    return Turn(**values)


def server_key(channel: str, persona: str | None = None, server: str = GUILD) -> MemoryKey:
    return MemoryKey.server(server, channel, persona)


def user_key(channel: str, *, user: str = "alice", persona: str | None = None,
             server: str | None = None) -> MemoryKey:
    return MemoryKey.user(user, channel, persona, server)


def messages(*lines: Line) -> tuple[CrudeMessage, ...]:
    return tuple(CrudeMessage(role=role, speaker_name=speaker, content=content, timestamp_ms=0)
                 for role, speaker, content in lines)


async def capture(stm: Stm, key: MemoryKey, *lines: Line, counter_increment: int = 0,
                  lineage: str | None = None, parent: str | None = None) -> MemoryRecord:
    """A bot turn's crude capture of one row (also bumps its counter)."""
    settings = stm.settings
    [record] = await stm.engine.capture([CaptureWrite(
        key=key, messages=messages(*lines), now_ms=stm.clock.now_ms(),
        counter_increment=counter_increment, persona_lineage_id=lineage,
        parent_channel_id=parent, crude_ttl_ms=settings.crude_ttl_ms,
        summary_ttl_ms=settings.summary_ttl_ms)])
    return record


async def write(stm: Stm, key: MemoryKey, *, summary: str | None = None,
                categories: Mapping[str, str] | None = None, reset_counter: bool = False,
                lineage: str | None = None, parent: str | None = None) -> MemoryRecord:
    """A summary and/or category write (what the tool or an admin edit does)."""
    settings = stm.settings
    [record] = await stm.engine.write_memory([MemoryWrite(
        key=key, now_ms=stm.clock.now_ms(),
        set_summary=summary is not None, summary=summary,
        set_categories=categories is not None, categories=dict(categories or {}),
        reset_counter=reset_counter, persona_lineage_id=lineage, parent_channel_id=parent,
        crude_ttl_ms=settings.crude_ttl_ms, summary_ttl_ms=settings.summary_ttl_ms)])
    return record


async def set_settings(stm: Stm, server_id: str = GUILD, **changes: object) -> ServerSettings:
    """Store server settings, then mirror the committed row into the cache."""
    return await stm.engine.write_settings(server_id, lambda: stm.adapter.update_server_settings(
        server_id, changes, now_ms=stm.clock.now_ms()))


async def set_categories(stm: Stm, labels: Sequence[str],
                         server_id: str = GUILD) -> ServerSettings:
    categories = [CategoryRecord(position=i, label=label, description=f"{label} so far")
                  for i, label in enumerate(labels)]
    settings, _removed = await stm.engine.write_categories(
        server_id, lambda: stm.adapter.replace_categories(
            server_id, categories, now_ms=stm.clock.now_ms(), clear_server_memories=False))
    return settings


async def set_opt_in(stm: Stm, user_id: str = "alice", value: bool = True) -> None:
    await stm.engine.write_prefs(user_id, lambda: stm.adapter.set_user_prefs(
        user_id, crossserver_opt_in=value, now_ms=stm.clock.now_ms()))


def other_text(ctx: StmContext) -> str | None:
    texts = [i.text for i in ctx.memory_items if i.kind == "other_channels"]
    return texts[0] if texts else None


def same_text(ctx: StmContext) -> str | None:
    texts = [i.text for i in ctx.memory_items if i.kind == "same_channel"]
    return texts[0] if texts else None


def all_text(ctx: StmContext) -> str:
    parts = [i.text for i in ctx.memory_items]
    if ctx.nudge_item is not None:
        parts.append(ctx.nudge_item.text)
    return "\n".join(parts)
