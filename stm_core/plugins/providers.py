"""How stm reads a turn's provider key, as hosts write it (DESIGN decision 20).

A key is a family (``"anthropic"``), a routing prefix with a model
(``"anthropic/claude-3-5-sonnet"``, LiteLLM's and OpenRouter's convention), a
LiteLLM provider name (``"vertex_ai"``) or a router (``"openrouter"``,
``"litellm"``) whose model is ``Turn.model``; a bare model id that plainly names
its family (``"gpt-4o-mini"``, ``"claude-3-5-sonnet"``, ``"gemini-1.5-pro"``,
:data:`MODEL_ID_FAMILIES`) is read as that family with that model.
:func:`resolve_provider` turns it into the family stm's tool-format rule reads,
and the model: ``Turn.model``, or the part after the slash when the host set none.

Hooks that 0.1.0 had see the key exactly as the host wrote it (docs/hook-policy.md,
"Provider keys"); a plugin that wants the family asks :func:`provider_family`.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
import threading
from collections.abc import Mapping

import attrs

from hookspecs.types import ToolFormat
from stm_core.errors import UnknownProvider, ValidationError

#: LiteLLM's spellings of providers that stm knows by another name.
LITELLM_SPELLINGS: dict[str, str] = {
    "vertex_ai": "vertex",
    "vertex_ai_beta": "vertex",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "hosted_vllm": "vllm",
    "lm_studio": "lmstudio",
    "ollama_chat": "ollama",
    "litellm_proxy": "litellm",
}

#: Model-id beginnings that plainly name a family, for hosts that pass an
#: llm-style model id as the provider (``provider="gpt-4o-mini"``).
MODEL_ID_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:chatgpt|gpt)-|o\d(?:-|$)"), "openai"),
    (re.compile(r"claude-"), "anthropic"),
    (re.compile(r"gemini-"), "gemini"),
)

#: Keys resolved per process before the memo starts over (hosts name them).
_MEMO_ENTRIES = 4096


@attrs.frozen(kw_only=True)
class ProviderKey:
    """A provider key as the host wrote it, and what stm reads in it."""

    #: ``Turn.provider``, unchanged.
    provider: str
    #: The family: trimmed, lower-cased, without the model after a slash, with
    #: LiteLLM's spelling of a known provider replaced (``"vertex_ai"`` is
    #: ``"vertex"``), or the family a bare model id names (``"gpt-4o"`` is
    #: ``"openai"``). ``""`` when the host named no provider.
    family: str
    #: ``Turn.model``, or when unset the part after the first slash of the key,
    #: or the key itself when it is a model id that names its family.
    model: str | None


def normalize_provider(provider: str) -> str:
    """Provider keys compare trimmed and lower-cased (``" OpenAI"`` is ``"openai"``)."""
    return provider.strip().lower()


def resolve_provider(provider: str, model: str | None = None) -> ProviderKey:
    """The family and model of a turn's ``provider`` and ``model``.

    >>> key = resolve_provider("anthropic/claude-3-5-sonnet")
    >>> key.family, key.model
    ('anthropic', 'claude-3-5-sonnet')
    >>> resolve_provider("vertex_ai", "gemini-1.5-pro").family
    'vertex'
    >>> resolve_provider("openrouter/anthropic/claude-3-5-sonnet").model
    'anthropic/claude-3-5-sonnet'
    >>> key = resolve_provider("gpt-4o-mini")
    >>> key.family, key.model
    ('openai', 'gpt-4o-mini')

    Raises :class:`~stm_core.errors.ValidationError` when ``provider`` is not
    text or ``model`` neither text nor ``None``.
    """
    if not isinstance(provider, str):
        raise ValidationError(f"provider must be text (str), got {type(provider).__name__} "
                              f"{provider!r}", field="provider", allowed="text")
    if model is not None and not isinstance(model, str):
        raise ValidationError(f"model must be text (str) or None, got {type(model).__name__} "
                              f"{model!r}", field="model", allowed="text or None")
    return _resolve(provider, model)


@functools.lru_cache(maxsize=_MEMO_ENTRIES)
def _resolve(provider: str, model: str | None) -> ProviderKey:
    prefix, slash, rest = provider.strip().partition("/")
    family = normalize_provider(prefix)
    family = LITELLM_SPELLINGS.get(family, family)
    if not model and slash:
        model = rest.strip() or None
    if not slash:
        named = model_id_family(family)
        if named is not None:
            family, model = named, model or prefix.strip()
    return ProviderKey(provider=provider, family=family, model=model or None)


def model_id_family(key: str) -> str | None:
    """The family a bare model id plainly names (``"claude-3-5-haiku"`` is
    ``"anthropic"``), else ``None``."""
    for pattern, family in MODEL_ID_FAMILIES:
        if pattern.match(key):
            return family
    return None


def provider_family(provider: str) -> str:
    """The family of a provider key (see :func:`resolve_provider`)."""
    return resolve_provider(provider).family


# The tool-format fallback: which declaration format a turn gets when no rule
# knows its provider. The rule itself is Hooks.tool_format_for; the families
# are built-in plugins (stm_plugins.tool_formats, stm_plugins.tool_format_rule).

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
