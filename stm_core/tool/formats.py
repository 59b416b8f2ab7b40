"""Helpers of the tool-format rule (which declaration format a turn gets).

The rule itself lives in :meth:`stm_core.hooks.Hooks.tool_format_for`; the
provider families are built-in plugins (:mod:`stm_plugins.tool_formats` and
:mod:`stm_plugins.tool_format_rule`); how a key is read is
:mod:`stm_core.providers`. A provider no rule knows gets :data:`FALLBACK_FORMAT`
with a warning (what 0.1 gave it, so such a turn keeps working), or
:class:`~stm_core.errors.UnknownProvider` under ``Settings.strict_providers``.
"""

from __future__ import annotations

import difflib
import logging
import threading
from collections.abc import Mapping

from stm_core.errors import UnknownProvider
from stm_core.plugin_types import ToolFormat
from stm_core.providers import normalize_provider

__all__ = ["FALLBACK_FORMAT", "fallback_format", "normalize_provider", "unknown_provider"]

log = logging.getLogger("stm.tool.formats")
#: The format of a provider no rule knows, outside strict mode.
FALLBACK_FORMAT = "openai"
#: Provider keys already warned about in this process (bounded: hosts name them).
_warned: set[str] = set()
_warned_lock = threading.Lock()
_WARNED_ENTRIES = 1024


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


def fallback_format(provider: str, model: str | None, formats: Mapping[str, ToolFormat],
                    claims: Mapping[str, ToolFormat], *, strict: bool) -> ToolFormat:
    """The format of a provider no rule knows: :data:`FALLBACK_FORMAT`, with one
    warning per provider key and process; an error when ``strict`` (or when no
    plugin registers the fallback)."""
    fallback = formats.get(FALLBACK_FORMAT)
    if strict or fallback is None:
        raise unknown_provider(provider, model, claims)
    if provider not in _warned:
        with _warned_lock:
            first = provider not in _warned
            if first:
                if len(_warned) >= _WARNED_ENTRIES:
                    _warned.clear()
                _warned.add(provider)
        if first:
            log.warning("%s. Using the %r format; set STM_STRICT_PROVIDERS=1 to make this "
                        "an error", unknown_provider(provider, model, claims), FALLBACK_FORMAT)
    return fallback
