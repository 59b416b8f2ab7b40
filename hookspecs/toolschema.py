"""Tool-schema declaration formats, and which one a provider and model use."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import ToolFormat


class ToolSchemaSpecs:
    @hookspec
    def stm_register_tool_formats(self) -> Iterable[ToolFormat]:
        """Offer tool-declaration formats, by key and by the providers using them.

        When: once per plugin set. ``tool_schema(turn)`` renders the neutral
        :class:`~hookspecs.types.ToolSchema` with the format the host asks
        for by key, else the one :meth:`stm_tool_format` names, else the format
        whose ``providers`` lists the turn's provider (see the tool-format rule
        in the host guide). ``openai``, ``openai-strict``, ``openai-responses``,
        ``openai-responses-strict``, ``anthropic``, ``gemini`` and ``neutral``
        are built in.

        :return: an iterable of :class:`~hookspecs.types.ToolFormat`. Two
            plugins registering the same key, or claiming the same provider, is
            a :class:`~stm_core.errors.PluginError` naming both.

        Example::

            @hookimpl
            def stm_register_tool_formats():
                return [ToolFormat(key="acme", providers={"acme"},
                                   render=lambda s: {"fn": s.name, "args": s.json_schema()})]
        """
        raise NotImplementedError

    @hookspec(firstresult=True)
    def stm_tool_format(self, provider: str, model: str | None) -> str | None:
        """Name the tool format (a registered key) for a provider and model.

        When: the first ``tool_schema(turn)`` of each ``(provider, model)`` pair
        without an explicit ``format=`` (memoized). The host's ``format=`` beats
        every answer. A built-in ``trylast`` implementation knows gateways that
        serve several model families under one provider key (``bedrock`` and
        ``vertex`` with Claude models use the Anthropic format).

        :param provider: the family of the turn's provider key
            (:func:`stm_core.plugins.providers.provider_family`: trimmed, lower-cased,
            without the model after a slash, ``"vertex_ai"`` read as ``"vertex"``).
        :param model: the turn's model (``Turn.model``, or the part after the
            slash of a ``family/model`` key), or ``None``.
        :return: a format key registered with :meth:`stm_register_tool_formats`,
            or ``None`` to leave the choice to the next plugin and then to the
            formats' ``providers``. Stops at the first non-None result; naming a
            key nobody registered is a :class:`~stm_core.errors.PluginError`.

        .. versionadded:: 0.2

        Example (a gateway whose Anthropic models take Anthropic declarations)::

            @hookimpl
            def stm_tool_format(provider, model):
                if provider == "acme-gateway" and (model or "").startswith("claude"):
                    return "anthropic"
                return None
        """
        raise NotImplementedError
