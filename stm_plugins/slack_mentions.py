"""Slack mention syntax (``trylast``): mentions become names from the turn.

* ``<@U123>`` / ``<@U123|alice>`` -> the user's name from ``turn.user_names``,
  else the name the mention carries;
* ``<#C123>`` / ``<#C123|general>`` -> ``the channel named `general` ``
  (names from ``turn.channel_names`` first);
* ``<!subteam^S123>`` / ``<!subteam^S123|@team>`` -> ``@team`` (names from
  ``turn.role_names`` first);
* ``<!here>``, ``<!channel>``, ``<!everyone>`` -> ``@here`` ...

A mention with no known name stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hookspecs import hookimpl
from hookspecs.types import MentionConverter
from stm_core.mention_names import channel_label, role_label
from stm_core.models import Turn

#: ``<@U1|name>``, ``<#C1|name>``, ``<!subteam^S1|@team>``, ``<!here>`` in one pass.
_MENTION = re.compile(
    r"<(?:(@|#)([A-Z0-9][A-Z0-9_]*)|!subteam\^([A-Z0-9]+)|!(here|channel|everyone))"
    r"(?:\|([^<>|]*))?>")


def _mention(match: re.Match[str], turn: Turn) -> str:
    sigil, ident, team, broadcast, label = match.groups()
    named: str | None
    if broadcast is not None:
        named = "@" + broadcast
    elif team is not None:
        named = role_label(team, turn, label)
    elif sigil == "#":
        named = channel_label(ident, turn, label)
    else:
        named = turn.user_names.get(ident, label or None)
    return named or match.group(0)


def convert_slack_mentions(text: str, turn: Turn) -> str:
    if "<" in text:
        text = _MENTION.sub(lambda m: _mention(m, turn), text)
    return text


@hookimpl(trylast=True)
def stm_mention_converters() -> Iterable[MentionConverter]:
    return [convert_slack_mentions]
