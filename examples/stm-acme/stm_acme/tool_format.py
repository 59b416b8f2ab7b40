"""The ``acme`` tool-declaration format, the default for provider ``acme``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stm_acme import ACME
from stm_core import ToolFormat, ToolSchema, hookimpl


def render_acme(schema: ToolSchema) -> dict[str, Any]:
    """Acme declares a tool as an ``action`` with a flat list of string inputs."""
    return {
        "action": schema.name,
        "about": schema.description,
        "inputs": [{"name": name, "about": about, "kind": "text"}
                   for name, about in schema.properties],
    }


@hookimpl
def stm_register_tool_formats() -> Iterable[ToolFormat]:
    return [ToolFormat(key="acme", render=render_acme, providers={ACME})]
