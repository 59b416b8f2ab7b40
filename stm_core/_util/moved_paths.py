"""Old import paths of modules that moved, kept working for a deprecation period.

One table, :data:`MOVED`, maps each old dotted path to its home; one finder on
``sys.meta_path`` serves it. Importing an old path warns with a
:class:`DeprecationWarning` and binds the old name to the moved module itself,
so ``import old.path``, ``from old.path import name`` and patching an attribute
all act on the one real module. A moved package's modules follow it
(``stm_core.demo.runner`` is ``stm_core.cli.demo.runner``).

:data:`CALLED` lists the modules that 0.1 called as functions: the module is
the package now, and calling it warns and calls the function.

docs/hook-policy.md lists the old paths and when they go.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: The release that removes the old paths (the next major, per the hook policy).
REMOVED_IN = "1.0"

#: Each old path and its home.
MOVED: dict[str, str] = {
    # moved in 0.2
    "stm_core.plugin_loader": "stm_core.plugins.loader",
    "stm_core.hookimpl_checks": "stm_core.plugins.checks",
    "stm_core.dist_scan": "stm_core.plugins.dist_scan",
    "stm_core.introspect": "stm_core.plugins.introspect",
    "stm_core.tracing": "stm_core.plugins.tracing",
    "stm_core.cli_plugins": "stm_core.cli.plugins",
    "stm_core.cli_plugin_new": "stm_core.cli.plugins_new",
    "stm_core.plugin_scaffold": "stm_core.cli.scaffold",
    "stm_core.plugin_scaffold_templates": "stm_core.cli.scaffold_templates",
    "stm_core.names": "stm_core.name_maps",
    "stm_core.expiry": "stm_core.pipeline.memory_ttl",
    # moved in 0.3: the plugin wing and the hook contract's own types
    "stm_core.hooks": "stm_core.plugins.hooks",
    "stm_core.plugins.types": "hookspecs.types",
    "stm_core.storage.factory": "stm_core.plugins.storage",
    "stm_core.providers": "stm_core.plugins.providers",
    "stm_core.tool.formats": "stm_core.plugins.providers",
    # the engine and its helpers
    "stm_core.cache": "stm_core.engine.cache",
    "stm_core.invalidation": "stm_core.engine.invalidation",
    "stm_core.janitor": "stm_core.engine.janitor",
    "stm_core.profile": "stm_core.engine.profile",
    # stages' helpers, kept with their users
    "stm_core.record": "stm_core.pipeline.record",
    "stm_core.memory_ttl": "stm_core.pipeline.memory_ttl",
    "stm_core.prompt_reuse": "stm_core.inject.prompt_reuse",
    "stm_core.demo": "stm_core.cli.demo",
    # the blocking facade
    "stm_core.sync_admin": "stm_core.sync.admin",
    "stm_core.sync_session": "stm_core.sync.session",
    # text helpers
    "stm_core.templates": "stm_core.text.templates",
    "stm_core.truncation": "stm_core.text.truncation",
    "stm_core.reltime": "stm_core.text.reltime",
    "stm_core.slugs": "stm_core.text.slugs",
    "stm_core.text_memo": "stm_core.text.memo",
    "stm_core.intent": "stm_core.text.intent",
    "stm_core.long_term_tools": "stm_core.text.long_term_tools",
    # private utilities
    "stm_core.clock": "stm_core._util.clock",
    "stm_core.arguments": "stm_core._util.arguments",
    "stm_core.telemetry": "stm_core._util.telemetry",
    "stm_core.last_made": "stm_core._util.one_slot_memo",
    "stm_core.unchecked": "stm_core._util.fast_attrs",
    "stm_core.moved": "stm_core._util.moved_paths",
}

#: Old paths that stay, without a warning: the path plugin authors were told to
#: use for the hook record types (docs/hook-policy.md). Its stub,
#: ``stm_core/plugin_types.pyi``, is what type checkers read.
KEPT: dict[str, str] = {
    "stm_core.plugin_types": "hookspecs.types",
}

#: Modules that 0.1 called as functions, and the function they stand for.
CALLED: dict[str, str] = {
    "stm_core.inject": "stm_core.inject.inject",
}


def home_of(old: str) -> str | None:
    """Where the module imported as ``old`` lives now, or ``None``."""
    for table in (MOVED, KEPT):
        if old in table:
            return table[old]
    package, _, rest = old.rpartition(".")
    while package:
        if package in MOVED:
            return f"{MOVED[package]}.{rest}"
        package, _, head = package.rpartition(".")
        rest = f"{head}.{rest}"
    return None


class _Alias:
    """Loader of an old path: the moved module itself, after a warning."""

    def __init__(self, old: str, new: str, *, warn: bool) -> None:
        self.old, self.new, self.warn = old, new, warn

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if self.warn:
            # stacklevel 2 skips the import system's frames: the warning names
            # the file that wrote the import.
            warnings.warn(f"{self.old} moved to {self.new}; the old path is deprecated and "
                          f"will be removed in stm {REMOVED_IN}", DeprecationWarning,
                          stacklevel=2)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the moved module ran at its own path."""


class _CallableModule(ModuleType):
    """A module that 0.1 called as a function: calling it warns and calls the
    function named in :data:`CALLED`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = CALLED[self.__name__]
        module, _, name = target.rpartition(".")
        warnings.warn(f"calling the {self.__name__} package is deprecated and stops working "
                      f"in stm {REMOVED_IN}; use `from {module} import {name}`",
                      DeprecationWarning, stacklevel=2)
        function = getattr(importlib.import_module(module), name)
        return function(*args, **kwargs)


class _MakeCallable:
    """The module's own loader, which then lets the module be called."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        module.__class__ = _CallableModule
        spec = module.__spec__
        if spec is not None:
            spec.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)


class MovedPathFinder:
    """Finds the old paths of :data:`MOVED` and :data:`KEPT`, and wraps the
    modules of :data:`CALLED`."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("stm_core."):
            return None  # every import of the process passes here: others leave at once
        if fullname in CALLED:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = _MakeCallable(spec.loader)  # type: ignore[assignment]
            return spec
        new = home_of(fullname)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        alias = _Alias(fullname, new, warn=fullname not in KEPT)
        return importlib.machinery.ModuleSpec(fullname, alias)  # type: ignore[arg-type]


def serve_old_paths() -> None:
    """Serve the old paths (once per process)."""
    if not any(f is MovedPathFinder for f in sys.meta_path):
        sys.meta_path.insert(0, MovedPathFinder)
