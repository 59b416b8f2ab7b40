"""The plugin wing: building the plugin manager and what plugins work with.

* :mod:`~stm_core.plugins.manager`: :class:`StmPluginManager`, pluggy's manager
  with a record of where each plugin came from;
* :mod:`~stm_core.plugins.registration`: :func:`create_plugin_manager` and
  :func:`register_host_plugin` (the hookspecs, the built-ins, then third parties);
* :mod:`~stm_core.plugins.loader`: entry-point plugins, loaded tolerantly;
* :mod:`~stm_core.plugins.records`: where a plugin came from, why one failed,
  the load policy;
* :mod:`~stm_core.plugins.checks`: hook implementations that are wrong or will
  never run;
* :mod:`~stm_core.plugins.dist_scan`: distribution metadata read without
  importing ``importlib.metadata``;
* :mod:`~stm_core.plugins.introspect`: what ``stm plugins`` shows;
* :mod:`~stm_core.plugins.tracing`: hook-call logging (``STM_TRACE_PLUGINS=1``);
* :mod:`~stm_core.plugins.types`: the record types hooks return and receive
  (plugin authors import them as :mod:`stm_core.plugin_types`).

The names below load on first use (PEP 562), so importing one of the modules
above does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.lazy_names import lazy_names

if TYPE_CHECKING:
    from stm_core.plugins.manager import StmPluginManager
    from stm_core.plugins.records import (
        ENTRY_POINT_GROUP,
        LoadPolicy,
        PluginFailure,
        PluginKind,
        PluginOrigin,
        SkippedPlugin,
    )
    from stm_core.plugins.registration import (
        DEFAULT_PLUGINS,
        STM_DISTRIBUTION,
        create_plugin_manager,
        plugin_name,
        register_host_plugin,
        spec_hook_names,
        stm_version,
        unknown_hook_impls,
        unknown_hooks_text,
    )

#: Where each name lives.
_HOME = {
    "StmPluginManager": "stm_core.plugins.manager",
    "ENTRY_POINT_GROUP": "stm_core.plugins.records",
    "LoadPolicy": "stm_core.plugins.records",
    "PluginFailure": "stm_core.plugins.records",
    "PluginKind": "stm_core.plugins.records",
    "PluginOrigin": "stm_core.plugins.records",
    "SkippedPlugin": "stm_core.plugins.records",
    "DEFAULT_PLUGINS": "stm_core.plugins.registration",
    "STM_DISTRIBUTION": "stm_core.plugins.registration",
    "create_plugin_manager": "stm_core.plugins.registration",
    "plugin_name": "stm_core.plugins.registration",
    "register_host_plugin": "stm_core.plugins.registration",
    "spec_hook_names": "stm_core.plugins.registration",
    "stm_version": "stm_core.plugins.registration",
    "unknown_hook_impls": "stm_core.plugins.registration",
    "unknown_hooks_text": "stm_core.plugins.registration",
}

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "STM_DISTRIBUTION",
    "LoadPolicy",
    "PluginFailure",
    "PluginKind",
    "PluginOrigin",
    "SkippedPlugin",
    "StmPluginManager",
    "create_plugin_manager",
    "plugin_name",
    "register_host_plugin",
    "spec_hook_names",
    "stm_version",
    "unknown_hook_impls",
    "unknown_hooks_text",
]

__getattr__, __dir__ = lazy_names(globals(), _HOME, __all__)
