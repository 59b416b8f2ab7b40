"""A host turning plugin tracing on in code."""

from stm_core.plugins import StmPluginManager


def traced_plugin_manager() -> StmPluginManager:
    # -- start tracing --
    import logging

    from stm_core import create_plugin_manager

    logging.basicConfig(format="%(name)s: %(message)s")
    pm = create_plugin_manager(trace=True)  # or STM_TRACE_PLUGINS=1 in the environment
    # -- end tracing --
    return pm
