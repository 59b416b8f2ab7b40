"""Provider tool gates: may the ``update_short_term_memory`` tool be offered?"""

from __future__ import annotations

from hookspecs.markers import hookspec


class ToolGateSpecs:
    @hookspec
    def stm_tool_available(self, provider: str, has_tools: bool, stm_enabled: bool,
                           explicit_long_term_intent: bool,
                           model: str | None) -> bool | None:
        """Vote on whether the STM tool (and so the nudge) is available.

        When: while building a turn's context and its tool schema, and again
        before a tool call is applied. Answers are memoized per argument tuple
        until the plugin set changes, so the answer must depend on the
        arguments only.

        :param provider: the turn's LLM provider key exactly as the host wrote it
            (``"openai"``, ``"novelai"``, ``"anthropic/claude-3-5-sonnet"``...).
        :param has_tools: the provider/model supports tool calls at all.
        :param stm_enabled: the server's short-term-memory capability switch.
        :param explicit_long_term_intent: the user asked for a long-term action.
        :param model: the turn's model (``Turn.model``, or the part after the
            slash of a ``family/model`` key), or ``None`` when the host did not say.

            .. versionadded:: 0.2
        :return: ``False`` to deny (any ``False`` wins), ``True`` to allow, or
            ``None`` to abstain. With no ``False`` the tool is available.

        Example (a provider without tool support)::

            @hookimpl
            def stm_tool_available(provider):
                return False if provider == "textsynth" else None

        Example (one model of a provider without tool calling)::

            @hookimpl
            def stm_tool_available(provider, model):
                return False if (provider, model) == ("openai", "o1-mini") else None
        """
        raise NotImplementedError
