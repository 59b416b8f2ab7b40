"""The names docs/hook-policy.md promises in ``stm_plugins`` exist, and the
module list there is the built-in plugin list."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from stm_core.plugins import DEFAULT_PLUGINS

POLICY = Path(__file__).resolve().parents[2] / "docs" / "hook-policy.md"


def promised_names() -> list[str]:
    text = POLICY.read_text()
    section = text.split("## What is stable in `stm_plugins`", 1)[1].split("\n## ", 1)[0]
    promise = section.split("Everything else in `stm_plugins`", 1)[0]
    return sorted(set(re.findall(r"`(stm_plugins\.[\w.]+)", promise)))


def resolve(dotted: str) -> object:
    module_name, _, attribute = dotted.rpartition(".")
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        return getattr(importlib.import_module(module_name), attribute)


def test_the_section_promises_something() -> None:
    assert len(promised_names()) >= 15


@pytest.mark.parametrize("dotted", promised_names())
def test_every_promised_name_exists(dotted: str) -> None:
    assert resolve(dotted) is not None


def test_every_built_in_plugin_module_is_listed() -> None:
    modules = {n for n in promised_names() if n.count(".") == 1}

    assert modules == set(DEFAULT_PLUGINS)


def test_memory_adapter_takes_url_and_optional_settings() -> None:
    from stm_plugins.memory_storage import MemoryAdapter

    params = inspect.signature(MemoryAdapter).parameters
    assert list(params)[:2] == ["url", "settings"] and params["settings"].default is None
