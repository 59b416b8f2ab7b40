"""Nudge phrasing and tool description, per provider."""

from __future__ import annotations

from hookspecs.markers import hookspec


class PhrasingSpecs:
    @hookspec(firstresult=True)
    def stm_nudge_template(self, provider: str, mode: str, model: str | None) -> str | None:
        """The unified create/update nudge for a provider, before expansion.

        When: composing a provider's prompts (memoized per ``(provider, mode, model)``).
        A server's ``update_nudge_override`` beats every answer.

        :param provider: the LLM provider key.
        :param mode: ``"summary"`` or ``"category"``; in category mode the text
            should mention ``{category_labels}``.
        :param model: the turn's model (``Turn.model``, or the part after the
            slash of a ``family/model`` key), or ``None``.

            .. versionadded:: 0.2
        :return: the template (macros such as ``{short_term_memory_tool}`` and
            ``{category_labels}`` are expanded later), or ``None`` to let the next
            plugin answer. Stops at the first non-None result; the built-in
            default is ``trylast``.

        Example::

            @hookimpl
            def stm_nudge_template(provider, mode):
                if provider == "anthropic":
                    return "[System: Please refresh your notes with {short_term_memory_tool}.]"
                return None
        """
        raise NotImplementedError

    @hookspec(firstresult=True)
    def stm_tool_description(self, provider: str, mode: str,
                             model: str | None) -> str | None:
        """The description of the ``update_short_term_memory`` tool for a provider.

        When: building the tool schema (memoized per ``(provider, mode, model)``). A
        server's ``tool_description_override`` beats every answer, in both modes.

        :param provider: the LLM provider key.
        :param mode: ``"summary"`` or ``"category"``.
        :param model: the turn's model (``Turn.model``, or the part after the
            slash of a ``family/model`` key), or ``None``.

            .. versionadded:: 0.2
        :return: the description template, or ``None``. Stops at the first
            non-None result; the built-in default is ``trylast``.

        Example::

            @hookimpl
            def stm_tool_description(provider, mode):
                return "Keep short notes." if provider == "tiny-llm" else None
        """
        raise NotImplementedError
