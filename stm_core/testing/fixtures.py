"""Fixtures for testing stm plugins (enabled by ``pytest_plugins = ["stm_core.testing"]``).

Every name is prefixed (``stm_`` or ``register_plugin``/``make_turn``) so it does
not clash with a project's own fixtures. Nothing here loads installed entry
points: each test sees the built-ins plus exactly what it registers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import pytest
import pytest_asyncio

from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.plugins import StmPluginManager, create_plugin_manager, register_host_plugin
from stm_core.settings import Settings
from stm_core.store import Stm, open_store


class RegisterPlugin(Protocol):
    """``register_plugin(plugin, name=None) -> StmPluginManager``."""

    def __call__(self, plugin: object, name: str | None = None) -> StmPluginManager: ...


class MakeTurn(Protocol):
    """``make_turn(**overrides) -> Turn``."""

    def __call__(self, **overrides: Any) -> Turn: ...


#: What ``make_turn()`` builds when given no overrides: a server turn on an
#: OpenAI-style provider with tool support.
TURN_DEFAULTS: dict[str, Any] = {
    "user_id": "1001",
    "channel_id": "2001",
    "server_id": "3001",
    "bot_name": "Assistant",
    "triggerer_name": "Alice",
    "provider": "openai",
    "has_tools": True,
    "server_name": "Test Server",
    "channel_name": "general",
}


@pytest.fixture
def stm_clock() -> ManualClock:
    """A clock that moves only when the test says so (``stm_clock.advance(hours=1)``)."""
    return ManualClock()


@pytest.fixture
def stm_plugin_manager() -> StmPluginManager:
    """A fresh plugin manager with the built-in plugins and no entry points."""
    return create_plugin_manager(load_entrypoints=False, trace=False)


@pytest.fixture
def register_plugin(stm_plugin_manager: StmPluginManager) -> Iterator[RegisterPlugin]:
    """Register a plugin object or module on ``stm_plugin_manager`` for one test.

    It is validated as host code is (an unknown hook or a bad signature raises
    :class:`~stm_core.errors.PluginError`) and unregistered on teardown.
    """
    registered: list[str] = []

    def register(plugin: object, name: str | None = None) -> StmPluginManager:
        registered_name = register_host_plugin(stm_plugin_manager, plugin, name)
        if registered_name is not None:
            registered.append(registered_name)
        return stm_plugin_manager

    yield register
    for name in reversed(registered):
        if stm_plugin_manager.has_plugin(name):
            stm_plugin_manager.unregister(name=name)


@pytest.fixture
def make_turn() -> MakeTurn:
    """A :class:`~stm_core.models.Turn` factory: ``make_turn(provider="acme")``.

    Defaults are in :data:`TURN_DEFAULTS`; pass ``server_id=None`` for a DM.
    """

    def make(**overrides: Any) -> Turn:
        return Turn(**{**TURN_DEFAULTS, **overrides})

    return make


@pytest_asyncio.fixture
async def stm_memory_store(stm_plugin_manager: StmPluginManager,
                           stm_clock: ManualClock) -> AsyncIterator[Stm]:
    """An open :class:`~stm_core.store.Stm` on ``memory://`` that uses
    ``stm_plugin_manager`` (so ``register_plugin`` affects it, before or after
    it opened) and ``stm_clock``, with default settings."""
    async with open_store("memory://", settings=Settings(), clock=stm_clock,
                          plugin_manager=stm_plugin_manager) as store:
        yield store
