"""Tool declarations in the neutral form and in the formats of OpenAI (Chat
Completions and Responses, each also in strict mode), Anthropic and Gemini.

Each format claims the provider keys whose API takes it. Gateways that speak
the OpenAI API for every model they route to (OpenRouter, LiteLLM, Azure
OpenAI, ...) are OpenAI providers whatever the model; gateways with one API per
model family are decided by :mod:`stm_plugins.tool_format_rule`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hookspecs import hookimpl
from hookspecs.types import ToolFormat, ToolSchema

#: Providers whose API takes OpenAI Chat Completions declarations (with
#: LiteLLM's names of such providers: ``azure_ai``, ``nvidia_nim``, ...; its
#: other spellings are read as these keys, see :mod:`stm_core.plugins.providers`).
OPENAI_PROVIDERS = (
    "openai", "azure", "azure-openai", "azure_ai", "openrouter", "litellm", "groq",
    "mistral", "deepseek", "xai", "together", "fireworks", "ollama", "vllm", "lmstudio",
    "perplexity", "cerebras", "deepinfra", "nvidia_nim", "sambanova",
)
ANTHROPIC_PROVIDERS = ("anthropic", "claude", "anthropic-bedrock", "anthropic-vertex")
GEMINI_PROVIDERS = ("google", "gemini", "google-genai", "google-ai", "aistudio")


def neutral(schema: ToolSchema) -> dict[str, Any]:
    return {"name": schema.name, "description": schema.description,
            "parameters": schema.json_schema(), "mode": schema.mode}


def strict_json_schema(schema: ToolSchema) -> dict[str, Any]:
    """The arguments as OpenAI's strict mode demands: no other properties, every
    property required, and a field the model may leave out typed nullable. In
    category mode any field may be left out (one is enough), so all are
    nullable; the summary of summary mode is always needed."""
    field_type: str | list[str] = ["string", "null"] if schema.mode == "category" else "string"
    return {
        "type": "object",
        "properties": {n: {"type": field_type, "description": d}
                       for n, d in schema.properties},
        "required": list(schema.required),
        "additionalProperties": False,
    }


def openai(schema: ToolSchema) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": schema.name, "description": schema.description,
                         "parameters": schema.json_schema()}}


def openai_strict(schema: ToolSchema) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": schema.name, "description": schema.description,
                         "parameters": strict_json_schema(schema), "strict": True}}


def openai_responses(schema: ToolSchema) -> dict[str, Any]:
    # ``strict`` is stated: the Responses API would otherwise apply its own default.
    return {"type": "function", "name": schema.name, "description": schema.description,
            "parameters": schema.json_schema(), "strict": False}


def openai_responses_strict(schema: ToolSchema) -> dict[str, Any]:
    return {"type": "function", "name": schema.name, "description": schema.description,
            "parameters": strict_json_schema(schema), "strict": True}


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
        ToolFormat(key="openai", render=openai, providers=OPENAI_PROVIDERS),
        ToolFormat(key="openai-strict", render=openai_strict),
        ToolFormat(key="openai-responses", render=openai_responses),
        ToolFormat(key="openai-responses-strict", render=openai_responses_strict),
        ToolFormat(key="anthropic", render=anthropic, providers=ANTHROPIC_PROVIDERS),
        ToolFormat(key="gemini", render=gemini, providers=GEMINI_PROVIDERS),
    ]
