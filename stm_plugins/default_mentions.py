"""Identity placeholders in emitted texts (``trylast``), whatever the platform.

``{bot}``, ``{char}`` (and double-brace forms) -> the bot name; ``{user}``,
``{user_formatted}``, ``{user_term}`` (and double-brace forms) -> the
triggerer name. Mention syntax is a platform's concern:
``stm_plugins.discord_mentions`` and ``stm_plugins.slack_mentions``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable

from hookspecs import hookimpl
from hookspecs.types import MentionConverter
from stm_core.models import Turn

_IDENTITY = re.compile(r"\{\{?(bot|char|user|user_formatted|user_term)\}?\}", re.IGNORECASE)


def convert_identities(text: str, turn: Turn) -> str:
    if "{" not in text:
        return text

    def identity(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.count("{") != token.count("}"):
            return token
        name = m.group(1).lower()
        return turn.bot_name if name in ("bot", "char") else turn.triggerer_name

    return _IDENTITY.sub(identity, text)


def convert_mentions(text: str, turn: Turn) -> str:
    """Deprecated: Discord mentions and identities in one call. Mention syntax
    moved to :func:`stm_plugins.discord_mentions.convert_discord_mentions`;
    this name stays (docs/hook-policy.md) and warns until its removal."""
    warnings.warn("stm_plugins.default_mentions.convert_mentions is deprecated; use "
                  "stm_plugins.discord_mentions.convert_discord_mentions and "
                  "convert_identities", DeprecationWarning, stacklevel=2)
    from stm_plugins.discord_mentions import convert_discord_mentions

    return convert_identities(convert_discord_mentions(text, turn), turn)


@hookimpl(trylast=True)
def stm_mention_converters() -> Iterable[MentionConverter]:
    return [convert_identities]
