"""Helpers of the tool-format rule (which declaration format a turn gets).

The rule itself lives in :meth:`stm_core.hooks.Hooks.tool_format_for`; the
provider families are built-in plugins (:mod:`stm_plugins.tool_formats` and
:mod:`stm_plugins.tool_format_rule`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from stm_core.errors import UnknownProvider
from stm_core.plugin_types import ToolFormat


def normalize_provider(provider: str) -> str:
    """Provider keys compare trimmed and lower-cased (``" OpenAI"`` is ``"openai"``)."""
    return provider.strip().lower()


def unknown_provider(provider: str, model: str | None,
                     claims: Mapping[str, ToolFormat]) -> UnknownProvider:
    """The error for a provider no family knows, with the closest known keys."""
    key = normalize_provider(provider)
    known = sorted(claims)
    close = difflib.get_close_matches(key, known, n=3)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    model_text = f" with model {model!r}" if model else ""
    return UnknownProvider(
        f"no tool format is known for provider {provider!r}{model_text}{hint}; pass "
        "tool_schema(turn, format=...) with a registered format key, or teach stm the "
        "provider with an stm_tool_format plugin. Known providers: " + ", ".join(known),
        field="provider", allowed=", ".join(known))
