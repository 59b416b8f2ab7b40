"""Tool declarations in the neutral form and in OpenAI, Anthropic and Gemini formats."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hookspecs import hookimpl
from stm_core.plugin_types import ToolFormat, ToolSchema


def neutral(schema: ToolSchema) -> dict[str, Any]:
    return {"name": schema.name, "description": schema.description,
            "parameters": schema.json_schema(), "mode": schema.mode}


def openai(schema: ToolSchema) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": schema.name, "description": schema.description,
                         "parameters": schema.json_schema()}}


def anthropic(schema: ToolSchema) -> dict[str, Any]:
    return {"name": schema.name, "description": schema.description,
            "input_schema": schema.json_schema()}


def gemini(schema: ToolSchema) -> dict[str, Any]:
    return {"name": schema.name, "description": schema.description,
            "parameters": {
                "type": "OBJECT",
                "properties": {n: {"type": "STRING", "description": d}
                               for n, d in schema.properties},
                "required": list(schema.required)}}


@hookimpl
def stm_register_tool_formats() -> Iterable[ToolFormat]:
    return [
        ToolFormat(key="neutral", render=neutral),
        ToolFormat(key="openai", render=openai, providers=("openai", "openrouter")),
        ToolFormat(key="anthropic", render=anthropic, providers=("anthropic",)),
        ToolFormat(key="gemini", render=gemini, providers=("google", "gemini", "vertex")),
    ]
