"""The deprecation mechanics docs/hook-policy.md promises, shown on a
hypothetical future version of a spec: implementations that use a deprecated
argument (or a deprecated hook) are warned when they are registered."""

from __future__ import annotations

import warnings

import pluggy
import pytest
from future_phrasing_specs import PhrasingSpecs

from hookspecs import PROJECT_NAME, hookimpl


class OldStyle:
    @hookimpl
    def stm_nudge_template(self, provider: str, mode: str) -> str | None:
        return None


class NewStyle:
    @hookimpl
    def stm_nudge_template(self, provider: str, memory_mode: str) -> str | None:
        return None


class OldHook:
    @hookimpl
    def stm_tool_description(self, provider: str) -> str | None:
        return None


def manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(PhrasingSpecs)
    return pm


def test_an_implementation_taking_a_deprecated_argument_is_warned() -> None:
    with pytest.warns(DeprecationWarning, match="'mode' argument is deprecated"):
        manager().register(OldStyle())


def test_an_implementation_of_a_deprecated_hook_is_warned() -> None:
    with pytest.warns(DeprecationWarning, match="stm_tool_description is deprecated"):
        manager().register(OldHook())


def test_an_implementation_that_moved_on_is_not_warned() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        manager().register(NewStyle())
