"""Render modes of other-channel memories, registered by key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from hookspecs.markers import hookspec

if TYPE_CHECKING:
    from hookspecs.types import RenderMode


class RenderSpecs:
    @hookspec
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        """Offer render modes; a server picks one by key (``render_mode``).

        When: once per plugin set. ``crude_summary`` (the default) and
        ``supersede`` are built in. ``render(parts)`` must depend on
        ``parts`` alone: stm reuses its text on later turns while a cached
        row and the turn inputs its parts come from stay the same.

        :return: an iterable of :class:`~hookspecs.types.RenderMode`;
            results of all plugins are combined. Two plugins registering the
            same key is a :class:`~stm_core.errors.PluginError` naming both.

        Example (summaries only, never raw lines)::

            def _render(parts):
                if parts.body is None:
                    return ""
                return f"{parts.memory_header}{parts.body}]\\n\\n"

            @hookimpl
            def stm_register_render_modes():
                return [RenderMode(key="summary_only", render=_render)]
        """
        raise NotImplementedError
