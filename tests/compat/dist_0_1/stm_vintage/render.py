"""The ``vintage_ledger`` render mode: an other channel's summary as a ledger line."""

from stm_core import RenderMode, hookimpl


def render_ledger(parts):
    if parts.body is None:
        return ""
    return f"{parts.memory_header}LEDGER: {parts.body}]\n\n"


@hookimpl
def stm_register_render_modes():
    return [RenderMode(key="vintage_ledger", render=render_ledger,
                       description="the other channel's summary as a ledger line")]
