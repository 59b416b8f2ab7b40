"""Modules loaded on first attribute access, to keep short commands fast.

A module bound with :func:`lazy_module` costs nothing at import time; its code
runs the first time one of its names is read. Bind it under ``TYPE_CHECKING``
to the real import as well, so type checkers see the module itself.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module object that imports itself when first used."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
