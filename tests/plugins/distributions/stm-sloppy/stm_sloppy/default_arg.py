"""A parameter the hook does not have, given a default: never passed."""

from stm_core import hookimpl


@hookimpl
def stm_tool_available(provider: str, temperature: float | None = None) -> bool | None:
    return None
