"""The one typed facade through which stm calls plugins.

Nothing else touches ``pm.hook``. Registration-style hooks are called once per
plugin set; per-provider answers are memoized per argument tuple. Everything is
recomputed when the plugin manager's ``generation`` moves, so the per-turn
path costs dictionary lookups, not hook calls.

An exception raised inside a plugin's hook propagates as it is (``build_context``
catches everything and returns its fallback); only the admin permission hook
turns one into a :class:`PluginError`, so a broken policy refuses the call.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from hookspecs.types import (
    Actor,
    AdminAction,
    MentionConverter,
    RenderMode,
    StorageAdapterSpec,
    TokenCounter,
    ToolFormat,
    VisibilityPolicy,
)
from stm_core.errors import PluginError, UnknownDatabaseURL
from stm_core.plugins import StmPluginManager
from stm_core.plugins.providers import fallback_format, normalize_provider, resolve_provider

T = TypeVar("T")
log = logging.getLogger("stm.hooks")
#: The format of a turn that names no provider.
DEFAULT_TOOL_FORMAT = "openai"
#: Answers kept per plugin set before the memo starts over: per-provider and
#: per-model answers are keyed by names the host passes, which need not be few.
MEMO_ENTRIES = 4096


class Hooks:
    """Typed, memoizing access to the plugins of one manager."""

    def __init__(self, pm: StmPluginManager) -> None:
        self.pm = pm
        self._generation = -1
        self._memo: dict[Any, Any] = {}

    # -- memo plumbing -----------------------------------------------------
    def _cached(self, key: Any, compute: Callable[..., T], *args: Any) -> T:
        """``compute(*args)``, worked out once per plugin set. The hot callers
        pass a method and its arguments rather than a closure: a hit then
        makes no function object (every build asks several of these)."""
        memo = self._memo
        if self._generation != self.pm.generation:
            memo.clear()
            self._generation = self.pm.generation
        value: T
        try:
            value = memo[key]
        except KeyError:
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()  # keys carry hosts' provider and model names
            value = memo[key] = compute(*args)
        return value

    @property
    def generation(self) -> int:
        return self.pm.generation

    def plugin_set_memo(self, name: str, make: Callable[..., T], *args: Any) -> T:
        """What ``make(*args)`` makes (an empty memo for answers that depend on
        the plugins, such as rendered texts, or what a build takes from the
        plugins), made again whenever the plugin set changes."""
        return self._cached(("memo", name), make, *args)

    def _call_or_refuse(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a hook; a plugin's exception becomes a PluginError naming it."""
        caller = getattr(self.pm.hook, hook_name)
        try:
            return caller(**kwargs)
        except PluginError:
            raise
        except Exception as exc:
            culprit = _culprit(caller.get_hookimpls(), exc)
            who = f"plugin {culprit!r}" if culprit else "a plugin"
            raise PluginError(f"{who} failed in {hook_name}: "
                              f"{type(exc).__name__}: {exc}") from exc

    def _owners(self, hook_name: str, matches: Callable[[Any], bool]) -> list[str]:
        """Names of the plugins whose answer to a registration hook matches."""
        owners = []
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            for record in impl.function() or ():
                if matches(record):
                    owners.append(impl.plugin_name)
        return owners

    def _registry(self, hook_name: str, key_of: Callable[[T], Iterable[str]],
                  what: str) -> dict[str, T]:
        registry: dict[str, T] = {}
        for batch in getattr(self.pm.hook, hook_name)():
            for record in batch or ():
                for key in key_of(record):
                    if key in registry:
                        owners = self._owners(hook_name, _has_key(key_of, key))
                        raise PluginError(
                            f"{what} {key!r} is registered by more than one plugin: "
                            + " and ".join(repr(o) for o in owners))
                    registry[key] = record
        return registry

    # -- storage -------------------------------------------------------------
    def storage_schemes(self) -> dict[str, StorageAdapterSpec]:
        return self._cached("storage", lambda: self._registry(
            "stm_register_storage_adapters", lambda s: s.schemes, "storage scheme"))

    def storage_adapter_for(self, url: str) -> StorageAdapterSpec:
        scheme = url.split("://", 1)[0] if "://" in url else ""
        specs = self.storage_schemes()
        if scheme not in specs:
            known = ", ".join(sorted(f"{s}://" for s in specs)) or "none"
            raise UnknownDatabaseURL(
                f"no storage adapter claims the URL scheme {scheme + '://' if scheme else url!r}; "
                f"registered schemes: {known}")
        return specs[scheme]

    # -- gates ---------------------------------------------------------------
    def tool_available(self, provider: str, has_tools: bool, stm_enabled: bool,
                       explicit_long_term_intent: bool, model: str | None = None) -> bool:
        key = ("gate", provider, has_tools, stm_enabled, explicit_long_term_intent, model)
        return self._cached(key, self._gate, key)  # the hook's arguments made on a miss only

    def _gate(self, key: tuple[str, str, bool, bool, bool, str | None]) -> bool:
        _, provider, has_tools, stm_enabled, explicit_long_term_intent, model = key
        return self._no_veto("stm_tool_available", dict(
            provider=provider, has_tools=has_tools, stm_enabled=stm_enabled,
            explicit_long_term_intent=explicit_long_term_intent,
            model=resolve_provider(provider, model).model))

    def _no_veto(self, hook_name: str, kwargs: dict[str, Any]) -> bool:
        """A gate's verdict: any ``False`` wins. An answer that is not a bool
        or ``None`` (``"no"``, ``0``) is logged and counts as abstaining."""
        caller = getattr(self.pm.hook, hook_name)
        answers = caller(**kwargs)
        if any(not isinstance(a, bool) for a in answers):
            for name, answer in _odd_answers(caller.get_hookimpls(), kwargs):
                log.warning("plugin %r answered %s with %r, which is not True, False or "
                            "None; treated as no opinion", name, hook_name, answer)
        return False not in [a for a in answers if isinstance(a, bool)]

    # -- phrasing --------------------------------------------------------------
    def nudge_template(self, provider: str, mode: str, model: str | None = None) -> str:
        return self._cached(("nudge", provider, mode, model), lambda: self._required_text(
            self.pm.hook.stm_nudge_template(provider=provider, mode=mode,
                                            model=resolve_provider(provider, model).model),
            "stm_nudge_template"))

    def tool_description(self, provider: str, mode: str, model: str | None = None) -> str:
        return self._cached(("tooldesc", provider, mode, model), lambda: self._required_text(
            self.pm.hook.stm_tool_description(provider=provider, mode=mode,
                                              model=resolve_provider(provider, model).model),
            "stm_tool_description"))

    @staticmethod
    def _required_text(value: object, hook: str) -> str:
        if not isinstance(value, str):
            raise PluginError(f"no plugin answered {hook} with a string (got {value!r})")
        return value

    # -- render modes -------------------------------------------------------------
    def render_modes(self) -> dict[str, RenderMode]:
        return self._cached("render", lambda: self._registry(
            "stm_register_render_modes", lambda m: (m.key,), "render mode"))

    # -- macros ----------------------------------------------------------------------
    def macros(self, provider: str) -> Mapping[str, str]:
        def compute() -> dict[str, str]:
            merged: dict[str, str] = {}
            # Hook order is most-recently-registered first; the first answer wins.
            for answer in self.pm.hook.stm_prompt_macros(provider=provider):
                for name, value in (answer or {}).items():
                    merged.setdefault(name, value)
            return merged
        return self._cached(("macros", provider), compute)

    # -- mentions / visibility / annotations -------------------------------------------
    def mention_converters(self) -> tuple[MentionConverter, ...]:
        return self._cached("mentions", self._flattened, "stm_mention_converters")

    def visibility_policies(self) -> tuple[VisibilityPolicy, ...]:
        return self._cached("visibility", self._flattened, "stm_visibility_policies")

    def _flattened(self, hook_name: str) -> tuple[Any, ...]:
        """Every plugin's answer (an iterable, or ``None``) to a hook, in one tuple."""
        return tuple(item for batch in getattr(self.pm.hook, hook_name)() for item in (batch or ()))

    def annotation_pattern(self) -> re.Pattern[str] | None:
        def compute() -> re.Pattern[str] | None:
            patterns = [p for batch in self.pm.hook.stm_annotation_patterns()
                        for p in (batch or ())]
            return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
        return self._cached("annotations", compute)

    # -- tool formats ----------------------------------------------------------------
    def tool_formats(self) -> dict[str, ToolFormat]:
        return self._cached("toolformats", lambda: self._registry(
            "stm_register_tool_formats", lambda f: (f.key,), "tool format"))

    def tool_format_for(self, provider: str, model: str | None = None, *,
                        strict: bool = False) -> ToolFormat:
        """The format of a provider and model (docs/host-guide.md, "The tool-format
        rule"): a plugin's ``stm_tool_format`` answer for the key's family and
        model, else the format whose ``providers`` claims the family, else
        OpenAI's when no provider is given. A provider no rule knows gets the
        fallback format with a warning, or :class:`UnknownProvider` when
        ``strict`` (:func:`stm_core.plugins.providers.fallback_format`)."""
        found = self._cached(("toolformat", provider, model), self._tool_format, provider, model)
        if found is None:
            return fallback_format(provider, model, self.tool_formats(),
                                   self.tool_format_claims(), strict=strict)
        return found

    def _tool_format(self, provider: str, model: str | None) -> ToolFormat | None:
        formats = self.tool_formats()
        key = resolve_provider(provider, model)
        named = self.pm.hook.stm_tool_format(provider=key.family, model=key.model)
        if named is not None:
            if not isinstance(named, str) or named not in formats:
                raise PluginError(f"stm_tool_format named the tool format {named!r} for "
                                  f"provider {key.family!r}, but no plugin registers it")
            return formats[named]
        claims = self.tool_format_claims()
        for claimed in (normalize_provider(provider), key.family):  # a claim of the whole key first
            if claimed in claims:
                return claims[claimed]
        if not key.family and DEFAULT_TOOL_FORMAT in formats:
            return formats[DEFAULT_TOOL_FORMAT]
        return None

    def tool_format_claims(self) -> dict[str, ToolFormat]:
        """Provider key -> the format that claims it (``ToolFormat.providers``)."""
        return self._cached("toolformatclaims", lambda: self._registry(
            "stm_register_tool_formats",
            lambda f: tuple(normalize_provider(p) for p in f.providers),
            "tool format provider"))

    # -- prompt budget -------------------------------------------------------------
    def token_counter(self, provider: str) -> TokenCounter:
        return self._cached(("tokens", provider), self._token_counter, provider)

    def _token_counter(self, provider: str) -> TokenCounter:
        counter = self.pm.hook.stm_token_counter(provider=provider)
        if not callable(counter):
            raise PluginError(f"no plugin answered stm_token_counter with a callable "
                              f"(got {counter!r})")
        return cast(TokenCounter, counter)

    # -- admin permissions ---------------------------------------------------------
    def admin_allowed(self, actor: Actor, action: AdminAction) -> bool:
        """The permission policies' decision (no answer allows: a host that
        removed the built-in policy chose to check nothing)."""
        answer = self._call_or_refuse("stm_admin_permission", actor=actor, action=action)
        if answer is not None and not isinstance(answer, bool):
            # firstresult stopped at it, so it cannot abstain: a policy that
            # answers nonsense refuses the call, as one that raises does.
            raise PluginError(f"an stm_admin_permission policy answered {answer!r}, which is "
                              f"not True, False or None; refusing {action.name}")
        return answer is not False


def _odd_answers(impls: Iterable[Any], kwargs: dict[str, Any]) -> list[tuple[str, object]]:
    """Which implementations answered something other than a bool or None
    (called one by one again: only on this rare path, and hooks are pure)."""
    odd = []
    for impl in impls:
        if impl.hookwrapper or impl.wrapper:  # they wrap answers, they give none
            continue
        answer = impl.function(*(kwargs[name] for name in impl.argnames))
        if answer is not None and not isinstance(answer, bool):
            odd.append((impl.plugin_name, answer))
    return odd


def _culprit(impls: Iterable[Any], exc: BaseException) -> str | None:
    """The plugin whose hook function appears deepest in the traceback."""
    codes = {getattr(impl.function, "__code__", None): impl.plugin_name for impl in impls}
    found = None
    tb = exc.__traceback__
    while tb is not None:
        found = codes.get(tb.tb_frame.f_code, found)
        tb = tb.tb_next
    return found


def _has_key(key_of: Callable[[Any], Iterable[str]], key: str) -> Callable[[Any], bool]:
    return lambda record: key in key_of(record)
