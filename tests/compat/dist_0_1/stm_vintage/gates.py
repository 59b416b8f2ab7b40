"""A tool gate keyed on provider strings as a LiteLLM host writes them."""

from stm_core import hookimpl
from stm_vintage import NO_TOOLS


@hookimpl
def stm_tool_available(provider):
    return False if provider in NO_TOOLS else None
