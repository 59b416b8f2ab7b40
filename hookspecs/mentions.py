"""Mention conversion of every emitted text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import MentionConverter


class MentionSpecs:
    @hookspec
    def stm_mention_converters(self) -> Iterable[MentionConverter]:
        """Offer converters applied, in order, to every text stm emits.

        When: once per plugin set; each converter is then called per emitted
        text as ``converter(text, turn)``. The built-in converters (``trylast``)
        name Discord mentions (``<@id>``, ``<#id>``, ``<@&id>``), Slack mentions
        (``<@U123>``, ``<#C123|name>``) and ``{user}``/``{bot}`` from the turn.

        :return: an iterable of callables ``(text, turn) -> text``; all plugins'
            converters run, in hook order (most recently registered first).

        Example::

            @hookimpl
            def stm_mention_converters():
                return [lambda text, turn: text.replace("@everyone", "everyone")]
        """
        raise NotImplementedError
