"""Watches the replay for content that shows up where it must not.

Every line said in a private channel (or a thread under one) belongs to that
server's private realm: it may appear in the context of another private
channel of the same server, never elsewhere. Every line of a DM may appear
only in that DM. The audit checks each turn's memory items and nudge against
everything said so far.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from stm_core.cli.demo.results import Leak, Where


def realm_of(where: Where) -> str | None:
    """The realm a channel's lines stay in, or ``None`` for a public channel."""
    if where.visibility == "dm":
        return f"dm:{where.channel_id}"
    if where.visibility in ("private", "thread"):
        return f"private:{where.server_id}"
    return None


@attrs.frozen(kw_only=True)
class _Guarded:
    realm: str
    origin: str
    text: str


class PrivacyAudit:
    def __init__(self) -> None:
        self._guarded: list[_Guarded] = []
        self.private_lines = 0
        self.dm_lines = 0

    def said(self, where: Where, texts: Iterable[str]) -> None:
        realm = realm_of(where)
        if realm is None:
            return
        for text in texts:
            self._guarded.append(_Guarded(realm=realm, origin=where.label, text=text))
            if where.visibility == "dm":
                self.dm_lines += 1
            else:
                self.private_lines += 1

    def leaks(self, turn: int, where: Where, shown: Iterable[str]) -> list[Leak]:
        """Guarded lines of another realm found in what this turn showed the model."""
        realm = realm_of(where)
        shown = list(shown)
        return [Leak(turn=turn, channel=where.label, origin_channel=g.origin, text=g.text)
                for g in self._guarded
                if g.realm != realm and any(g.text in text for text in shown)]
