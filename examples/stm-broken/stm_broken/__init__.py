"""A plugin whose import fails, the way real ones do: a dependency that is
not installed. stm logs it, lists it as failed in ``stm plugins`` and keeps
working; ``STM_DISABLED_PLUGINS=stm-broken`` stops it from being imported."""

from __future__ import annotations

import acme_sdk_that_is_not_installed  # noqa: F401

from stm_core import hookimpl


@hookimpl
def stm_tool_available(provider: str) -> bool | None:
    return None
