"""Test kit for plugin authors: an opt-in pytest plugin.

Enable it in your ``conftest.py``::

    pytest_plugins = ["stm_core.testing"]

Fixtures (see :mod:`stm_core.testing.fixtures`):

* ``stm_plugin_manager`` -- a fresh manager with the built-ins, no entry points;
* ``register_plugin(plugin, name=None)`` -- register for one test, validated,
  unregistered on teardown; returns the manager;
* ``stm_memory_store`` -- an open ``Stm`` on ``memory://`` using that manager
  and ``stm_clock``;
* ``make_turn(**overrides)`` -- a ``Turn`` with sensible defaults;
* ``stm_clock`` -- a ``ManualClock``.

Storage adapter authors run the conformance suite by subclassing
``StorageAdapterConformance`` (from :mod:`stm_core.testing.conformance`, also
importable from here) and providing an ``adapter`` fixture.

It is deliberately not a ``pytest11`` entry point: installing stm adds nothing
to anybody's test session until they ask for it.
"""

from __future__ import annotations

from typing import Any

import pytest

# Detailed assertion messages inside the shared suites, as in one's own tests.
# Registered before the suite module is imported (it is imported lazily below).
pytest.register_assert_rewrite("stm_core.testing.conformance")

from stm_core.testing.fixtures import (  # noqa: E402 - after the rewrite hook
    TURN_DEFAULTS,
    MakeTurn,
    RegisterPlugin,
    make_turn,
    register_plugin,
    stm_clock,
    stm_memory_store,
    stm_plugin_manager,
)

__all__ = [
    "TURN_DEFAULTS",
    "MakeTurn",
    "RegisterPlugin",
    "StorageAdapterConformance",
    "make_turn",
    "register_plugin",
    "stm_clock",
    "stm_memory_store",
    "stm_plugin_manager",
]


def __getattr__(name: str) -> Any:
    # Imported on first use only, so enabling the fixtures does not drag the
    # suite's test methods into anybody's session.
    if name == "StorageAdapterConformance":
        from stm_core.testing.conformance import StorageAdapterConformance

        return StorageAdapterConformance
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
