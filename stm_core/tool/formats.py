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


def naming(provider: str, model: str | None, claims: Mapping[str, ToolFormat],
           guesses: int) -> str:
    """``provider 'x' with model 'y' (did you mean 'z'?)``: the closest known keys."""
    close = difflib.get_close_matches(normalize_provider(provider), sorted(claims), n=guesses)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    model_text = f" with model {model!r}" if model else ""
    return f"provider {provider!r}{model_text}{hint}"


def unknown_provider(provider: str, model: str | None,
                     claims: Mapping[str, ToolFormat]) -> UnknownProvider:
    """The error for a provider no family knows, with the closest known keys."""
    known = ", ".join(sorted(claims))
    return UnknownProvider(
        f"no tool format is known for {naming(provider, model, claims, 3)}; pass "
        "tool_schema(turn, format=...) with a registered format key, or teach stm the "
        "provider with an stm_tool_format plugin. Known providers: " + known,
        field="provider", allowed=known)


def fallback_warning(provider: str, model: str | None,
                     claims: Mapping[str, ToolFormat]) -> str:
    """One line: the unknown key, a guess at what was meant, the documented fallback."""
    return (f"unknown {naming(provider, model, claims, 1)}: using the documented fallback, "
            f"the {FALLBACK_FORMAT!r} format (STM_STRICT_PROVIDERS=1 makes it an error)")


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
            log.warning("%s", fallback_warning(provider, model, claims))
    return fallback
