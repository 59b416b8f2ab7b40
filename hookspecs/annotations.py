"""Per-turn annotations stripped from messages before they are stored."""

from __future__ import annotations

from collections.abc import Iterable

from hookspecs.markers import hookspec


class AnnotationSpecs:
    @hookspec
    def stm_annotation_patterns(self) -> Iterable[str]:
        """Regular expressions of turn-ephemeral annotations to strip.

        When: once per plugin set; ``record_turn`` removes every match from each
        message before storing it, collapses the whitespace left behind and
        drops messages left empty. The built-ins remove
        ``[System: This message (ID: ...) ...]``, ``[System: Message metadata: ...]``
        and ``[System: Reactions on this message: ...]``.

        :return: an iterable of regular-expression strings; all plugins'
            patterns are applied.

        Example::

            @hookimpl
            def stm_annotation_patterns():
                return [r"\\[System: Typing indicator[^\\]]*\\]"]
        """
        raise NotImplementedError
