# -- start first-plugin --
"""stm_shouty: a first stm plugin, in one file."""

from collections.abc import Iterable

from stm_core import OtherChannelParts, RenderMode, hookimpl


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    # The "textsynth" provider cannot call tools: no memory tool, no nudge.
    return False if provider == "textsynth" else None


def render_headline(parts: OtherChannelParts) -> str:
    if parts.body is None:
        return ""  # nothing summarised in that channel yet: show nothing
    return f"{parts.memory_header}{parts.body.upper()}]\n\n"


@hookimpl
def stm_register_render_modes() -> Iterable[RenderMode]:
    return [RenderMode(key="headline", render=render_headline,
                       description="the other channel's summary, in capitals")]
# -- end first-plugin --
