"""The two built-in render modes of other-channel memories."""

from __future__ import annotations

from collections.abc import Iterable

from hookspecs import hookimpl
from hookspecs.types import OtherChannelParts, RenderMode


def _crude_listing(parts: OtherChannelParts) -> str:
    # Upstream renders a header and a bare "]" for a row with no content;
    # we render nothing (DESIGN decision 1).
    if not parts.crude_lines:
        return ""
    return f"{parts.memory_header}{''.join(parts.crude_lines)}]\n\n"


def render_crude_summary(parts: OtherChannelParts) -> str:
    """The summary/category block, then the recent raw lines beside it."""
    if parts.body is None:
        return _crude_listing(parts)
    text = f"{parts.memory_header}{parts.body}]\n\n"
    if parts.crude_lines:
        text += f"{parts.raw_header}{''.join(parts.crude_lines)}]\n\n"
    return text


def render_supersede(parts: OtherChannelParts) -> str:
    """The summary/category block replaces the raw lines when it exists."""
    if parts.body is None:
        return _crude_listing(parts)
    return f"{parts.memory_header}{parts.body}]\n\n"


@hookimpl
def stm_register_render_modes() -> Iterable[RenderMode]:
    return [
        RenderMode(key="crude_summary", render=render_crude_summary,
                   description="summary or categories, plus the recent raw lines (default)"),
        RenderMode(key="supersede", render=render_supersede,
                   description="summary or categories replace the raw lines"),
    ]
