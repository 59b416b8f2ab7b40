"""Old import paths of modules that moved, kept working for a deprecation period.

A module that moved leaves a two-line module at its old path that calls
:func:`alias_moved_module`: importing the old path warns once with a
:class:`DeprecationWarning` and binds the old name to the new module itself, so
``import old.path``, ``from old.path import name`` and patching an attribute
all act on the one real module. docs/hook-policy.md lists the old paths and
when they go.
"""

from __future__ import annotations

import importlib
import sys
import warnings

#: The release that removes the old paths (the next major, per the hook policy).
REMOVED_IN = "1.0"


def alias_moved_module(old: str, new: str, *, warn: bool = True) -> None:
    """Warn that ``old`` moved to ``new``, and make ``old`` the module ``new``.

    Called from the module at ``old`` while it is being imported; the import
    system then hands the importer the module found in ``sys.modules``.
    ``warn=False`` is for an old path stm's own code still imports.
    """
    if warn:
        warnings.warn(f"{old} moved to {new}; the old path is deprecated and will be "
                      f"removed in stm {REMOVED_IN}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
