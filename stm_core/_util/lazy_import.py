"""Modules loaded on first attribute access, to keep short commands fast.

A module bound with :func:`lazy_module` costs nothing at import time; its code
runs the first time one of its names is read. Bind it under ``TYPE_CHECKING``
to the real import as well, so type checkers see the module itself. Once it
has run, the module is also bound on its package (``package.child``), as an
import would have done; not before, so code that walks the package's names
(pluggy registering it as a plugin, ``dir``) never loads it by accident.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module object that imports itself when first used."""
    loaded = sys.modules.get(name)
    # object's own lookup: reading an attribute of a lazy module would load it.
    spec = (object.__getattribute__(loaded, "__spec__") if loaded is not None
            else importlib.util.find_spec(name))
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    if spec.submodule_search_locations is not None:
        # Importing one of its modules reads the package's __path__, which
        # runs it, and then installs that module over any lazy one the
        # package's code bound meanwhile: two copies of one module.
        raise ImportError(f"{name!r} is a package: bind one of its modules lazily instead",
                          name=name)
    if loaded is not None:
        return loaded
    # A duck-typed loader: importing importlib.abc to subclass its Loader
    # would cost a quick command more than everything this module saves it.
    loader = importlib.util.LazyLoader(cast("Loader", _BindOnLoad(spec.loader)))
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


class _BindOnLoad:
    """The module's own loader, which also binds the module on its package
    when it finally runs."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module's own loader again, as if it had been imported eagerly.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        parent, _, child = module.__name__.rpartition(".")
        package = sys.modules.get(parent)
        if package is not None:
            setattr(package, child, module)
