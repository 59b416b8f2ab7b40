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
from hookspecs.types import MentionConverter
from stm_core.mention_names import channel_label, role_label
from stm_core.models import Turn
from stm_core.text.memo import TextMemo

_LINK = re.compile(r"https?://(?:\w+\.)?discord(?:app)?\.com/channels/[\w@]+/(\d+)(?:/\d+)?")
#: A part of every text ``_LINK`` matches.
_LINK_MARK = ".com/channels/"
#: ``<@id>``, ``<@!id>``, ``<#id>`` and ``<@&id>`` in one pass.
_MENTION = re.compile(r"<(@&|@!?|#)([^\s<>|!&#@][^\s<>|]*)>")


def _name(sigil: str, ident: str, turn: Turn) -> str | None:
    """What a mention of ``ident`` reads as in ``turn``, or ``None`` (it stays)."""
    if sigil == "#":
        return channel_label(ident, turn)
    if sigil == "@&":
        return role_label(ident, turn)
    return turn.user_names.get(ident)


#: ``(token, sigil, id, what it became)`` for each distinct mention of a text.
_Mentions = tuple[tuple[str, str, str, str], ...]

# What each mention token became in the last turn converted: a token is
# converted once however often the turn's texts repeat it. One turn is
# remembered (a turn's texts are converted together); holding it keeps its
# identity from being reused by another.
_converted: tuple[Turn | None, dict[str, str]] = (None, {})

#: Texts converted lately -> (the result, the mentions it read). The same
#: text comes back turn after turn (an other-channel block while those
#: channels are quiet, the nudge, a same-channel memory between writes), and
#: is converted again only when one of its mentions reads differently.
#: Bounded by entries and by characters: with the prompt budget off a block
#: can be long.
RECENT_TEXTS = 256
_recent: TextMemo[str, tuple[str, _Mentions]] = TextMemo(max_entries=RECENT_TEXTS)
#: Hashes of texts converted once and not remembered: a text is remembered
#: when it comes back. A host's turn follows a write, so its other-channel
#: block is most often new and never seen again; keeping each would cost
#: memory and collector time for nothing. A hash shared by two texts only
#: makes the second remembered early.
_seen_once: set[int] = set()


def convert_discord_mentions(text: str, turn: Turn) -> str:
    global _converted
    remembered = _recent.get(text)
    if remembered is not None:
        result, mentions = remembered
        for token, sigil, ident, out in mentions:
            if (_name(sigil, ident, turn) or token) != out:
                break
        else:
            return result
    converted = text
    # Every link the pattern takes holds this; a longer needle is a faster scan.
    if _LINK_MARK in converted:
        converted = _LINK.sub(lambda m: f"<#{m.group(1)}>", converted)
    found: dict[str, tuple[str, str, str, str]] = {}
    if "<" in converted:
        seen_turn, tokens = _converted
        if seen_turn is not turn:
            tokens = {}
            _converted = (turn, tokens)

        def mention(m: re.Match[str]) -> str:
            token = m.group(0)
            out = tokens.get(token)
            if out is None:
                sigil, ident = m.group(1), m.group(2)
                out = tokens[token] = _name(sigil, ident, turn) or token
            if token not in found:
                found[token] = (token, m.group(1), m.group(2), out)
            return out

        converted = _MENTION.sub(mention, converted)
    _remember(text, converted, tuple(found.values()))
    return converted


def _remember(text: str, converted: str, mentions: _Mentions) -> None:
    """Remember a text's conversion the second time it is converted."""
    seen = hash(text)  # already worked out by the lookup: strings keep their hash
    if seen not in _seen_once:
        if len(_seen_once) >= 4 * RECENT_TEXTS:
            _seen_once.clear()
        _seen_once.add(seen)
        return
    _seen_once.discard(seen)
    if _recent.full():
        _recent.clear()
    _recent.remember(text, (converted, mentions), len(text) + len(converted))


@hookimpl(trylast=True)
def stm_mention_converters() -> Iterable[MentionConverter]:
    return [convert_discord_mentions]
