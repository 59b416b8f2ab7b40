"""The tool format of gateways that serve several model families under one
provider key, decided by the model (``trylast``: any plugin answering first
wins; the host's ``format=`` beats both).

* ``bedrock``: Anthropic model ids (``anthropic.claude-...``, cross-region
  ``us.anthropic.claude-...`` and inference-profile ARNs naming one) take the
  Anthropic Messages format; other Bedrock models have no built-in format.
* ``vertex`` (LiteLLM's ``vertex_ai``): Claude models take the Anthropic
  format, Gemini models (or no model given) the Gemini format; other
  publishers' models have no built-in one.

The provider is the key's family (``"bedrock/anthropic.claude-..."`` arrives
as ``"bedrock"`` with the model after the slash; :mod:`stm_core.plugins.providers`).
Bedrock's Converse API (LiteLLM's ``bedrock/converse/...``) takes a format
stm does not build, so its models get no answer either.

A model these rules do not know gets no answer, so the turn's provider is
reported as unknown (a warning and the fallback format, or ``UnknownProvider``
under ``STM_STRICT_PROVIDERS``) rather than silently given a format that its
API would refuse.
"""

from __future__ import annotations

from hookspecs import hookimpl

BEDROCK = frozenset({"bedrock", "aws-bedrock", "amazon-bedrock"})
VERTEX = frozenset({"vertex", "vertexai", "vertex-ai", "google-vertex"})


def is_claude(model: str) -> bool:
    return "anthropic." in model or model.startswith("claude") or "/claude" in model


def bedrock_format(model: str | None) -> str | None:
    name = (model or "").lower()
    if name.startswith("converse/"):
        return None
    return "anthropic" if "anthropic." in name else None


def vertex_format(model: str | None) -> str | None:
    name = (model or "gemini").lower()
    if is_claude(name):
        return "anthropic"
    return "gemini" if "gemini" in name else None


@hookimpl(trylast=True)
def stm_tool_format(provider: str, model: str | None) -> str | None:
    if provider in BEDROCK:
        return bedrock_format(model)
    if provider in VERTEX:
        return vertex_format(model)
    return None
