"""An async def gate: never awaited, its veto would be lost."""

from stm_core import hookimpl


@hookimpl
async def stm_tool_available(provider: str) -> bool | None:
    return False
