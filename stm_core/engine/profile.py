"""A server's effective STM configuration, composed once per settings change.

``ServerProfile`` resolves stored settings against defaults (mode, categories,
slugs, labels, cadence, render mode, depths). ``PromptSet`` adds a provider's
prompts: the nudge, the tool description and the category descriptions, already
expanded (``{category_labels}``, macros) and sanitised; only mention conversion
is left for the turn. Both are memoized, so the per-turn path does no template
work.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Literal

import attrs

from stm_core.errors import ConfigurationError
from stm_core.settings import (
    DEFAULT_CACHE_POLICY,
    DEFAULT_CONTENT_DEPTH,
    DEFAULT_NUDGE_DEPTH,
    DEFAULT_REFRESH_CADENCE,
    DEFAULT_RENDER_MODE,
    Settings,
)
from stm_core.storage.records import CategoryRecord, ServerSettings
from stm_core.text.long_term_tools import long_term_macros
from stm_core.text.slugs import build_slug_map
from stm_core.text.templates import expand, sanitize

if TYPE_CHECKING:
    from hookspecs.types import RenderMode
    from stm_core.plugins.hooks import Hooks

log = logging.getLogger("stm.profile")

Mode = Literal["summary", "category"]

DEFAULT_CATEGORY = CategoryRecord(
    position=0,
    label="summary",
    description="A running summary of recent events, topics, and context from this "
                "conversation.",
)


def detect_mode(categories: tuple[CategoryRecord, ...]) -> Mode:
    """Summary (fallback) mode: exactly one category labelled ``summary``
    (any case). Anything else, including ``Summary!``, is category mode."""
    if len(categories) == 1 and categories[0].label.lower() == "summary":
        return "summary"
    return "category"


@attrs.frozen(kw_only=True)
class ServerProfile:
    settings: ServerSettings | None
    mode: Mode
    categories: tuple[CategoryRecord, ...]
    #: slug -> label, in position order.
    slug_map: dict[str, str]
    category_labels: str
    refresh_cadence: int
    render_mode: RenderMode
    crude_message_count: int
    nudge_injection_depth: int
    content_injection_depth: int
    stm_enabled: bool
    #: Tokens of the whole STM block per turn; 0 means no budget.
    prompt_budget_tokens: int
    private_channel_ids: frozenset[str]
    privacy_bypass: bool
    #: ``"freshness"`` or ``"stable"`` (see :mod:`stm_core.pipeline.cache_policy`).
    cache_policy: str = DEFAULT_CACHE_POLICY

    @functools.cached_property  # read several times on every turn
    def stable(self) -> bool:
        return self.cache_policy == "stable"


@attrs.frozen(kw_only=True)
class PromptSet:
    """A provider's prompts for one server, expanded and sanitised."""

    nudge: str
    tool_description: str
    #: slug -> description (category mode) or {"summary": ...} (summary mode).
    field_descriptions: dict[str, str]


SUMMARY_FIELD_DESCRIPTION = (
    "A comprehensive summary of the current story or conversation's key points, topics "
    "or context, focused on what may matter for later messages, with enough helpful detail."
)


def check_default_render_mode(hooks: Hooks, env: Settings) -> None:
    """A process-wide default that no plugin registers is a configuration
    error when the store opens, not a warning on every server's first turn."""
    modes = hooks.render_modes()
    if env.default_render_mode is not None and env.default_render_mode not in modes:
        raise ConfigurationError(
            f"STM_DEFAULT_RENDER_MODE is {env.default_render_mode!r}, which no plugin "
            f"registers; registered render modes: {', '.join(sorted(modes))}")


def build_profile(settings: ServerSettings | None, hooks: Hooks,
                  env: Settings) -> ServerProfile:
    s = settings or ServerSettings(server_id="")
    categories = s.categories or (DEFAULT_CATEGORY,)
    slug_map = build_slug_map([c.label for c in categories])
    modes = hooks.render_modes()
    key = s.render_mode or env.render_mode
    if key not in modes:
        log.warning("server %s uses render mode %r, which no plugin registers; using %r",
                    s.server_id, key, DEFAULT_RENDER_MODE)
        key = DEFAULT_RENDER_MODE
    return ServerProfile(
        settings=settings,
        mode=detect_mode(categories),
        categories=categories,
        slug_map=slug_map,
        category_labels=", ".join(c.label for c in categories),
        refresh_cadence=s.refresh_cadence or DEFAULT_REFRESH_CADENCE,
        render_mode=modes[key],
        crude_message_count=s.crude_message_count or env.default_crude_message_count,
        nudge_injection_depth=(DEFAULT_NUDGE_DEPTH if s.nudge_injection_depth is None
                               else s.nudge_injection_depth),
        content_injection_depth=(DEFAULT_CONTENT_DEPTH if s.content_injection_depth is None
                                 else s.content_injection_depth),
        stm_enabled=s.stm_enabled is not False,
        prompt_budget_tokens=(env.prompt_budget_tokens if s.prompt_budget_tokens is None
                              else s.prompt_budget_tokens),
        private_channel_ids=s.private_channel_ids,
        privacy_bypass=s.privacy_bypass,
        cache_policy=s.cache_policy or env.cache_policy,
    )


def build_prompts(profile: ServerProfile, provider: str, hooks: Hooks,
                  model: str | None = None, env: Settings | None = None) -> PromptSet:
    """Expand then sanitise, in the reference's order: ``{category_labels}``
    (category mode only, every occurrence), macros, placeholder sanitising."""
    values = long_term_macros(hooks.macros(provider), env or Settings())
    if profile.mode == "category":
        values["category_labels"] = profile.category_labels
    else:
        values.pop("category_labels", None)

    def finish(text: str) -> str:
        return sanitize(expand(text, values))

    s = profile.settings
    nudge = (s.update_nudge_override if s is not None and s.update_nudge_override
             else hooks.nudge_template(provider, profile.mode, model))
    description = (s.tool_description_override
                   if s is not None and s.tool_description_override
                   else hooks.tool_description(provider, profile.mode, model))
    if profile.mode == "summary":
        fields = {"summary": SUMMARY_FIELD_DESCRIPTION}
    else:
        by_label: dict[str, str] = {}
        for c in profile.categories:
            by_label.setdefault(c.label, c.description)
        fields = {slug: finish(by_label.get(label, label))
                  for slug, label in profile.slug_map.items()}
    return PromptSet(nudge=finish(nudge), tool_description=finish(description),
                     field_descriptions=fields)


class ProfileCache:
    """Memo of profiles (per settings object) and prompts (per provider and model)."""

    def __init__(self, hooks: Hooks, env: Settings, maxsize: int = 4096) -> None:
        self._hooks = hooks
        self._env = env
        self._maxsize = maxsize
        self._profiles: dict[str, tuple[ServerSettings | None, int, ServerProfile]] = {}
        self._prompts: dict[tuple[str, str, str | None],
                            tuple[ServerProfile, int, PromptSet]] = {}

    def profile(self, server_id: str, settings: ServerSettings | None) -> ServerProfile:
        # The manager's counter itself: ``Hooks.generation`` is a property, a
        # type lookup and a call on every build.
        gen = self._hooks.pm.generation
        hit = self._profiles.get(server_id)
        if hit is not None and hit[0] is settings and hit[1] == gen:
            return hit[2]
        profile = build_profile(settings, self._hooks, self._env)
        if len(self._profiles) >= self._maxsize:
            self._profiles.clear()
        self._profiles[server_id] = (settings, gen, profile)
        return profile

    def prompts(self, server_id: str, profile: ServerProfile, provider: str,
                model: str | None = None) -> PromptSet:
        gen = self._hooks.pm.generation
        hit = self._prompts.get((server_id, provider, model))
        if hit is not None and hit[0] is profile and hit[1] == gen:
            return hit[2]
        prompts = build_prompts(profile, provider, self._hooks, model, self._env)
        if len(self._prompts) >= self._maxsize:
            self._prompts.clear()
        self._prompts[(server_id, provider, model)] = (profile, gen, prompts)
        return prompts
