"""A package's public names imported on first use (PEP 562).

``import stm_core`` (or ``stm_core.admin``) then loads only what a caller
touches: the ``stm`` command starts faster, and a host pays for a name when
it first reads it. Read once, a name is a plain module attribute.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(namespace: dict[str, Any], homes: Mapping[str, str], public: Iterable[str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose globals are
    ``namespace``: ``homes`` maps each lazy name to the module that defines it.
    A name whose home is the package's submodule of that name is the submodule,
    as it will be once imported anyway."""
    package = namespace["__name__"]
    listed = tuple(public)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if home == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value  # later reads skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *listed})

    return __getattr__, __dir__
