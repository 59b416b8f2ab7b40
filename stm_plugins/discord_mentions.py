"""Discord mention syntax (``trylast``): mentions become names from the turn.

* ``<@id>`` / ``<@!id>`` -> the user's name from ``turn.user_names``;
* ``<#id>`` -> ``the channel named `name` `` (``the thread named ...`` for
  threads; an ID suffix when two channels share a name);
* ``<@&id>`` -> ``@rolename``;
* Discord channel/message links -> the channel's name.

Ids are any string without spaces, ``<``, ``>`` or ``|`` (Discord's are
numbers; hosts that map their own ids work the same). Unknown ids stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hookspecs import hookimpl
from stm_core.mention_names import channel_label, role_label
from stm_core.models import Turn
from stm_core.plugin_types import MentionConverter

_LINK = re.compile(r"https?://(?:\w+\.)?discord(?:app)?\.com/channels/[\w@]+/(\d+)(?:/\d+)?")
#: ``<@id>``, ``<@!id>``, ``<#id>`` and ``<@&id>`` in one pass.
_MENTION = re.compile(r"<(@&|@!?|#)([^\s<>|!&#@][^\s<>|]*)>")


def _mention(match: re.Match[str], turn: Turn) -> str:
    sigil, ident = match.group(1), match.group(2)
    if sigil == "#":
        return channel_label(ident, turn) or match.group(0)
    if sigil == "@&":
        return role_label(ident, turn) or match.group(0)
    return turn.user_names.get(ident, match.group(0))


# What each mention token became in the last turn converted: a token is
# converted once however often the turn's texts repeat it. One turn is
# remembered (a turn's texts are converted together); holding it keeps its
# identity from being reused by another.
_converted: tuple[Turn | None, dict[str, str]] = (None, {})


def convert_discord_mentions(text: str, turn: Turn) -> str:
    global _converted
    if "discord" in text:
        text = _LINK.sub(lambda m: f"<#{m.group(1)}>", text)
    if "<" in text:
        seen_turn, converted = _converted
        if seen_turn is not turn:
            converted = {}
            _converted = (turn, converted)

        def mention(m: re.Match[str]) -> str:
            token = m.group(0)
            out = converted.get(token)
            if out is None:
                out = converted[token] = _mention(m, turn)
            return out

        text = _MENTION.sub(mention, text)
    return text


@hookimpl(trylast=True)
def stm_mention_converters() -> Iterable[MentionConverter]:
    return [convert_discord_mentions]
