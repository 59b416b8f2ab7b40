"""The plugin manager: pluggy's, counting changes to its plugin set and
keeping a record of where each plugin came from.

Filling it (the hookspecs, the built-ins, the entry points, the host's own
plugins) is :mod:`stm_core.plugins.registration`'s job.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MethodType, ModuleType
from typing import cast

import pluggy
from pluggy import HookimplOpts, HookspecOpts

from hookspecs import PROJECT_NAME
from stm_core.plugins.records import LoadPolicy, PluginFailure, PluginOrigin, SkippedPlugin

__all__ = ["StmPluginManager"]


class StmPluginManager(pluggy.PluginManager):
    """A pluggy manager that counts changes to its plugin set and remembers
    where each plugin came from.

    The hook facade memoizes composed answers and recomputes them when
    ``generation`` moves. ``origins``, ``load_failures`` and ``skipped`` feed
    :func:`stm_core.plugins.introspect.describe_plugins`.
    """

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.generation = 0
        #: Registered plugins by name: kind, distribution, version, entry point.
        self.origins: dict[str, PluginOrigin] = {}
        #: Plugins that failed to import, register or validate (tolerant mode).
        self.load_failures: list[PluginFailure] = []
        #: Entry points (and built-ins) left out on purpose.
        self.skipped: list[SkippedPlugin] = []
        #: Loaded plugins with parts that will never run, by name (see
        #: :mod:`stm_core.plugins.checks`).
        self.plugin_warnings: dict[str, list[str]] = {}
        self.policy = LoadPolicy()

    def parse_hookimpl_opts(self, plugin: object, name: str) -> HookimplOpts | None:
        # Modules (every built-in plugin) answered from their own dict: pluggy
        # looks up each name, imported ones included, with the slower
        # inspect.getattr_static (see the CHANGELOG).
        if isinstance(plugin, ModuleType):
            found = _own_marker(vars(plugin), name, f"{self.project_name}_impl")
            if found is not _ASK_PLUGGY:
                return cast(HookimplOpts | None, found)
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: object, name: str) -> HookspecOpts | None:
        # The same for the spec classes, whose ``dir`` lists object's names
        # too. A class with bases of its own goes to pluggy (the spec may be
        # inherited).
        if isinstance(module_or_class, ModuleType) or (
                isinstance(module_or_class, type) and module_or_class.__bases__ == (object,)):
            found = _own_marker(vars(module_or_class), name, f"{self.project_name}_spec")
            if found is not _ASK_PLUGGY:
                return cast(HookspecOpts | None, found)
        return super().parse_hookspec_opts(module_or_class, name)  # type: ignore[arg-type]

    def register(self, plugin: object, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        self.generation += 1
        return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> object | None:
        registered_name = name if name is not None else self.get_name(plugin)
        result = super().unregister(plugin, name)
        if registered_name is not None:
            self.origins.pop(registered_name, None)
            self.plugin_warnings.pop(registered_name, None)
        self.generation += 1
        return result

    def set_blocked(self, name: str) -> None:
        super().set_blocked(name)
        self.generation += 1


#: What :func:`_own_marker` answers when pluggy must look itself.
_ASK_PLUGGY = object()


def _own_marker(members: Mapping[str, object], name: str, marker: str) -> object:
    """The hook marker of ``members[name]`` as pluggy would read it, from the
    namespace's own dict: a plain function carries its marker itself, and
    anything but a function or a method wrapper is no hook (``None``).
    Wrappers (rare) are :data:`_ASK_PLUGGY`."""
    value = members.get(name)
    if inspect.isfunction(value):
        opts = getattr(value, marker, None)
        return opts if isinstance(opts, dict) else None
    if isinstance(value, (staticmethod, classmethod, MethodType)):
        return _ASK_PLUGGY
    return None
