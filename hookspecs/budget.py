"""Token counting for the prompt budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import TokenCounter


class BudgetSpecs:
    @hookspec(firstresult=True)
    def stm_token_counter(self, provider: str) -> TokenCounter | None:
        """Offer the function that counts the tokens of a text for a provider.

        When: once per provider and plugin set (memoized); the counter is then
        called on the texts of a turn's short-term-memory block, to hold it to
        the prompt budget (``prompt_budget_tokens``). The built-in estimate
        (``trylast``) needs no package: about four characters of ASCII text,
        or one character of any other script, per token. The built-in
        ``stm_plugins.tiktoken_counter`` answers with ``tiktoken`` when the
        host has it installed.

        :param provider: the turn's LLM provider key.
        :return: a callable ``(text) -> int`` that is fast and never raises, or
            ``None`` to leave the choice to the next plugin. The first answer
            that is not ``None`` wins (firstresult). A counter that never
            counts more tokens than the text has UTF-8 bytes (byte-level BPE)
            may be marked with :func:`hookspecs.types.byte_bounded`:
            turns whose texts are shorter than the budget are then not
            counted at all.

        Example::

            @hookimpl
            def stm_token_counter(provider):
                if provider == "acme":
                    return lambda text: len(text.split())
                return None
        """
        raise NotImplementedError
