"""The data every scenario shares: a typical server, its channels, a turn's history.

The same plain values feed stm (through its storage API) and the hand-written
floors, so both sides do the same work on the same text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from stm_core.models import CrudeMessage, HistoryMessage, PersonaResponse, Turn

#: The clock of every scenario starts here (a fixed instant: texts are stable).
EPOCH_MS = 1_767_225_600_000
MINUTE_MS = 60_000

BOT = "Tomori"
PERSONA_ID = "7"
LINEAGE_ID = "70"
USER_ID = "200000000000000001"
USER_NAME = "Alice"
FRIEND_ID = "200000000000000002"
FRIEND_NAME = "Bob"

#: Channels of a guild: turn ``i`` talks in channel ``i % CHANNELS``.
CHANNELS = 100
#: Messages kept per channel, and their size (perf-notes: about 200 chars each).
MESSAGES = 10
MESSAGE_CHARS = 200

CATEGORY_LABELS = ("Goals", "Party Status", "HP/MP", "Location", "Open Threads")
CATEGORY_DESCRIPTIONS = (
    "What the party is trying to achieve right now.",
    "Who is in the party and how they are doing.",
    "Hit points and mana of every member.",
    "Where the scene takes place.",
    "Loose ends worth coming back to.",
)


def channel_id(n: int) -> str:
    return f"{100_000_000_000_000_000 + n}"


def server_id(n: int) -> str:
    return f"{900_000_000_000_000_000 + n}"


def _sentence(seed: int, chars: int) -> str:
    words = ("the", "party", "moved", "towards", "tower", "while", "Bob", "kept", "the",
             "silver", "key", "and", "Alice", "asked", "about", "mana", "potions", "again")
    out: list[str] = []
    n = seed
    while sum(len(w) + 1 for w in out) < chars:
        out.append(words[n % len(words)])
        n = n * 7 + 3
    return " ".join(out)[:chars]


def message_text(seed: int) -> str:
    """About 200 chars; every third one mentions the friend (mention conversion)."""
    text = _sentence(seed, MESSAGE_CHARS)
    return f"<@{FRIEND_ID}> {text}" if seed % 3 == 0 else text


def summary_text(seed: int) -> str:
    return f"{USER_NAME} and <@{FRIEND_ID}> " + _sentence(seed, 400) + "."


def category_values(seed: int) -> dict[str, str]:
    """slug -> value for the five categories (slugs as stm derives them)."""
    slugs = ("goals", "party_status", "hp_mp", "location", "open_threads")
    return {slug: _sentence(seed + k, 120) for k, slug in enumerate(slugs)}


@attrs.frozen(kw_only=True)
class ChannelSeed:
    """One channel's stored memory, as plain data."""

    channel_id: str
    name: str
    age_minutes: int
    summary: str | None
    categories: dict[str, str]
    messages: tuple[CrudeMessage, ...]
    counter: int


def crude_messages(seed: int, now_ms: int, count: int = MESSAGES) -> tuple[CrudeMessage, ...]:
    out = []
    for k in range(count):
        user_side = k % 2 == 0
        out.append(CrudeMessage(role="user" if user_side else "model",
                                content=message_text(seed + k),
                                speaker_name=(USER_NAME if k % 4 == 0 else FRIEND_NAME)
                                if user_side else BOT,
                                timestamp_ms=now_ms))
    return tuple(out)


def typical_server(now_ms: int) -> tuple[ChannelSeed, ...]:
    """The live channel (5 categories filled, counter at the cadence so the
    nudge fires) and 3 other channels with summaries and 10 messages each."""
    live = ChannelSeed(channel_id=channel_id(0), name="quest", age_minutes=3, summary=None,
                       categories=category_values(11), messages=crude_messages(0, now_ms),
                       counter=5)
    others = tuple(
        ChannelSeed(channel_id=channel_id(n), name=name, age_minutes=age,
                    summary=summary_text(n), categories={},
                    messages=crude_messages(n * 10, now_ms), counter=1)
        for n, name, age in ((1, "general", 45), (2, "art", 130), (3, "tavern", 20)))
    return (live, *others)


def channel_names(seeds: Sequence[ChannelSeed]) -> dict[str, str]:
    return {s.channel_id: s.name for s in seeds}


def build_turn(server: str, channel: str, names: dict[str, str]) -> Turn:
    return Turn(user_id=USER_ID, channel_id=channel, server_id=server,
                persona_id=PERSONA_ID, persona_lineage_id=LINEAGE_ID, bot_name=BOT,
                triggerer_name=USER_NAME, provider="openai", has_tools=True,
                user_names={USER_ID: USER_NAME, FRIEND_ID: FRIEND_NAME},
                channel_names=names)


def history(seed: int) -> tuple[HistoryMessage, ...]:
    """The window a host used for a turn: 9 messages, so with the reply 10 are
    kept; the user's lines carry their author, as the host guide asks."""
    return tuple(HistoryMessage(author_type="user" if k % 2 == 0 else "persona",
                                content=message_text(seed + k),
                                speaker_name=USER_NAME if k % 2 == 0 else BOT,
                                author_id=USER_ID if k % 2 == 0 else None)
                 for k in range(MESSAGES - 1))


def responses(seed: int) -> tuple[PersonaResponse, ...]:
    return (PersonaResponse(content=message_text(seed + 99), persona_name=BOT,
                            persona_id=PERSONA_ID, persona_lineage_id=LINEAGE_ID),)


#: Compact, non-ASCII kept: the very bytes stm stores (an encoder built once).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def messages_payload(hist: Sequence[HistoryMessage], resp: Sequence[PersonaResponse],
                     now_ms: int) -> str:
    """The JSON a raw writer stores for a turn: the same 10 messages stm keeps,
    as the same bytes."""
    items: list[dict[str, Any]] = [
        {"role": "user" if m.author_type == "user" else "model", "content": m.content,
         "speaker_name": m.speaker_name, "timestamp_ms": now_ms,
         **({"author_id": m.author_id} if m.author_id is not None else {})} for m in hist]
    items.extend({"role": "model", "content": r.content, "speaker_name": r.persona_name,
                  "timestamp_ms": now_ms} for r in resp)
    return _encode(items[-MESSAGES:])
