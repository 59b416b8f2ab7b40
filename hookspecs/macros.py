"""Prompt macros per provider (``{short_term_memory_tool}`` ...)."""

from __future__ import annotations

from collections.abc import Mapping

from hookspecs.markers import hookspec


class MacroSpecs:
    @hookspec
    def stm_prompt_macros(self, provider: str) -> Mapping[str, str] | None:
        """Values of prompt macros for a provider.

        When: composing a provider's prompts (memoized per provider). Macros are
        expanded in nudges, tool and category descriptions; unknown
        ``{placeholders}`` left afterwards are stripped to their bare name.

        :param provider: the LLM provider key.
        :return: a mapping of macro name (without braces) to replacement text, or
            ``None``. All answers are merged; on a clash the answer of the plugin
            called first (the most recently registered) wins.

        Example::

            @hookimpl
            def stm_prompt_macros(provider):
                return {"memory_tool": "`save_note`"}
        """
        raise NotImplementedError
