"""Tool-schema declaration formats per provider."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from stm_core.plugin_types import ToolFormat


class ToolSchemaSpecs:
    @hookspec
    def stm_register_tool_formats(self) -> Iterable[ToolFormat]:
        """Offer tool-declaration formats, by key and by the providers using them.

        When: once per plugin set. ``tool_schema(turn)`` renders the neutral
        :class:`~stm_core.plugin_types.ToolSchema` with the format whose
        ``providers`` lists the turn's provider (``"openai"`` otherwise), or with
        the format asked for by key. ``openai``, ``anthropic`` and ``gemini`` are
        built in.

        :return: an iterable of :class:`~stm_core.plugin_types.ToolFormat`. Two
            plugins registering the same key, or claiming the same provider, is
            a :class:`~stm_core.errors.PluginError` naming both.

        Example::

            @hookimpl
            def stm_register_tool_formats():
                return [ToolFormat(key="acme", providers={"acme"},
                                   render=lambda s: {"fn": s.name, "args": s.json_schema()})]
        """
        raise NotImplementedError
