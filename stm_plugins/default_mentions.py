"""The default mention converter (``trylast``): Discord-style mentions and
identity placeholders become names taken from the turn.

* ``<@id>`` / ``<@!id>`` -> the user's name from ``turn.user_names``;
* ``<#id>`` -> ``the channel named `name` `` (``the thread named ...`` for
  threads; an ID suffix when two channels share a name); unknown ids stay;
* ``<@&id>`` -> ``@rolename``;
* Discord channel/message links -> ``<#channel>`` first;
* ``{bot}``, ``{char}`` (and double-brace forms) -> the bot name; ``{user}``,
  ``{user_formatted}``, ``{user_term}`` (and double-brace forms) -> the
  triggerer name.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from operator import countOf

from hookspecs import hookimpl
from stm_core.models import Turn
from stm_core.plugin_types import MentionConverter

_LINK = re.compile(r"https?://(?:\w+\.)?discord(?:app)?\.com/channels/[\w@]+/(\d+)(?:/\d+)?")
#: ``<@id>``, ``<@!id>``, ``<#id>`` and ``<@&id>`` in one pass.
_MENTION = re.compile(r"<(@!?|#|@&)(\d+)>")
_IDENTITY = re.compile(r"\{\{?(bot|char|user|user_formatted|user_term)\}?\}", re.IGNORECASE)

# What each mention token became, per turn: a token is converted once however
# often the turn's texts repeat it, and a channel name is checked for clashes
# only for the channels actually mentioned, however many the turn names.
_CONVERTED: weakref.WeakKeyDictionary[Turn, dict[str, str]] = weakref.WeakKeyDictionary()


def channel_label(channel_id: str, turn: Turn) -> str | None:
    name = turn.channel_names.get(channel_id)
    if name is None:
        return None
    kind = "thread" if channel_id in turn.thread_ids else "channel"
    clash = countOf(turn.channel_names.values(), name) > 1
    suffix = f" (ID: {channel_id})" if clash else ""
    return f"the {kind} named `{name}`{suffix}"


def _mention(match: re.Match[str], turn: Turn) -> str:
    sigil, ident = match.group(1), match.group(2)
    if sigil == "#":
        return channel_label(ident, turn) or match.group(0)
    if sigil == "@&":
        role = turn.role_names.get(ident)
        return "@" + role if role is not None else match.group(0)
    return turn.user_names.get(ident, match.group(0))


def convert_mentions(text: str, turn: Turn) -> str:
    if "<" in text or "discord" in text:
        if "discord" in text:
            text = _LINK.sub(lambda m: f"<#{m.group(1)}>", text)
        converted = _CONVERTED.get(turn)
        if converted is None:
            converted = _CONVERTED[turn] = {}

        def mention(m: re.Match[str]) -> str:
            token = m.group(0)
            out = converted.get(token)
            if out is None:
                out = converted[token] = _mention(m, turn)
            return out
        text = _MENTION.sub(mention, text)
    if "{" in text:
        def identity(m: re.Match[str]) -> str:
            token = m.group(0)
            if token.count("{") != token.count("}"):
                return token
            name = m.group(1).lower()
            return turn.bot_name if name in ("bot", "char") else turn.triggerer_name
        text = _IDENTITY.sub(identity, text)
    return text


@hookimpl(trylast=True)
def stm_mention_converters() -> Iterable[MentionConverter]:
    return [convert_mentions]
