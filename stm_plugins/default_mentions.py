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
from collections.abc import Iterable

from hookspecs import hookimpl
from stm_core.models import Turn
from stm_core.plugin_types import MentionConverter

_LINK = re.compile(r"https?://(?:\w+\.)?discord(?:app)?\.com/channels/[\w@]+/(\d+)(?:/\d+)?")
_USER = re.compile(r"<@!?(\d+)>")
_CHANNEL = re.compile(r"<#(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")
_IDENTITY = re.compile(r"\{\{?(bot|char|user|user_formatted|user_term)\}?\}", re.IGNORECASE)


def channel_label(channel_id: str, turn: Turn) -> str | None:
    name = turn.channel_names.get(channel_id)
    if name is None:
        return None
    kind = "thread" if channel_id in turn.thread_ids else "channel"
    clash = sum(1 for n in turn.channel_names.values() if n == name) > 1
    suffix = f" (ID: {channel_id})" if clash else ""
    return f"the {kind} named `{name}`{suffix}"


def convert_mentions(text: str, turn: Turn) -> str:
    if "<" in text or "discord" in text:
        text = _LINK.sub(lambda m: f"<#{m.group(1)}>", text)
        text = _USER.sub(lambda m: turn.user_names.get(m.group(1), m.group(0)), text)
        text = _CHANNEL.sub(lambda m: channel_label(m.group(1), turn) or m.group(0), text)
        text = _ROLE.sub(lambda m: "@" + turn.role_names[m.group(1)]
                         if m.group(1) in turn.role_names else m.group(0), text)
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
