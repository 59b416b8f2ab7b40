"""Loading third-party plugins from the ``stm`` entry-point group."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stm_core.plugins import StmPluginManager

log = logging.getLogger("stm.plugin_loader")


def load_entrypoint_plugins(pm: StmPluginManager) -> None:
    """Register every plugin published under the ``stm`` entry-point group.

    A plugin that fails to import or register is logged and skipped.
    """
    from stm_core.plugins import ENTRY_POINT_GROUP

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.is_registered(None) or pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception:
            log.exception("failed to load stm plugin %r", ep.name)
