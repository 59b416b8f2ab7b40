"""A gate answering a string for provider "sloppy": logged, and no veto."""

from stm_core import hookimpl


@hookimpl
def stm_tool_available(provider: str) -> object:
    return "no" if provider == "sloppy" else None
