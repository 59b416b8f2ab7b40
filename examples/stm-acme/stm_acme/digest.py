"""The ``acme_digest`` render mode: one compact block per other channel.

The summary (or category lines) and only the latest raw line, in a single
block, instead of a memory block plus a raw-message block.
"""

from __future__ import annotations

from collections.abc import Iterable

from stm_core import OtherChannelParts, RenderMode, hookimpl


def render_digest(parts: OtherChannelParts) -> str:
    lines = [parts.body] if parts.body else []
    if parts.crude_lines:
        lines.append("Latest: " + parts.crude_lines[-1].strip())
    if not lines:
        return ""
    return parts.memory_header + "\n".join(lines) + "]\n\n"


@hookimpl
def stm_register_render_modes() -> Iterable[RenderMode]:
    return [RenderMode(key="acme_digest", render=render_digest,
                       description="summary and the latest raw line, in one block")]
