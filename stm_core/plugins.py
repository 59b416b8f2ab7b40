"""Building a plugin manager: the hookspecs, the built-ins, then third parties.

No import-time side effects: nothing is loaded until a host (or the ``stm``
command) calls :func:`create_plugin_manager`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

import pluggy

from hookspecs import PROJECT_NAME, SPEC_CLASSES

#: Built-in plugins, registered by the same path as third-party ones.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "stm_plugins.sqlalchemy_storage",
    "stm_plugins.memory_storage",
    "stm_plugins.novelai",
    "stm_plugins.builtin_gates",
    "stm_plugins.default_phrasing",
    "stm_plugins.render_modes",
    "stm_plugins.default_macros",
    "stm_plugins.default_mentions",
    "stm_plugins.privacy",
    "stm_plugins.tool_formats",
    "stm_plugins.default_annotations",
)

#: Entry-point group third-party distributions publish plugins under.
ENTRY_POINT_GROUP = "stm"


class StmPluginManager(pluggy.PluginManager):
    """A pluggy manager that counts changes to its plugin set.

    The hook facade memoizes composed answers and recomputes them when
    ``generation`` moves.
    """

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.generation = 0

    def register(self, plugin: object, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        self.generation += 1
        return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> object | None:
        result = super().unregister(plugin, name)
        self.generation += 1
        return result

    def set_blocked(self, name: str) -> None:
        super().set_blocked(name)
        self.generation += 1


def create_plugin_manager(*, load_entrypoints: bool = True,
                          plugins: Iterable[object] = (),
                          builtins: bool = True) -> StmPluginManager:
    """A fresh plugin manager.

    :param load_entrypoints: load third-party plugins from the ``stm``
        entry-point group (tolerantly; see :mod:`stm_core.plugin_loader`).
    :param plugins: plugin objects or modules the host registers in code.
    :param builtins: register the built-in plugins (tests may turn this off).
    """
    pm = StmPluginManager()
    for spec in SPEC_CLASSES:
        pm.add_hookspecs(spec)
    if builtins:
        for module_name in DEFAULT_PLUGINS:
            pm.register(importlib.import_module(module_name), name=module_name)
    if load_entrypoints:
        from stm_core.plugin_loader import load_entrypoint_plugins

        load_entrypoint_plugins(pm)
    for plugin in plugins:
        pm.register(plugin, name=_plugin_name(plugin))
    pm.check_pending()
    return pm


def _plugin_name(plugin: object) -> str | None:
    if isinstance(plugin, ModuleType):
        return plugin.__name__
    return getattr(plugin, "__name__", None) or getattr(plugin, "name", None)
