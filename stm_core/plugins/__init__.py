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
* :mod:`~hookspecs.types`: the record types hooks return and receive
  (plugin authors import them as :mod:`hookspecs.types`).

* :mod:`~stm_core.plugins.hooks`: :class:`Hooks`, the typed facade through
  which the engine, the pipeline and admin call plugins;
* :mod:`~stm_core.plugins.storage`: :func:`adapter_for_url`, the storage adapter
  a database URL names, found through the plugins;
* :mod:`~stm_core.plugins.providers`: how a turn's provider key is read, and the
  tool format of a provider no plugin knows.

This wing sits below the engine and above the storage contract
(:mod:`stm_core.storage`); the hook contract itself, :mod:`hookspecs`, imports
nothing of stm_core.
"""

from __future__ import annotations

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
