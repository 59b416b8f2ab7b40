"""Server parameters: ranges, effective values with defaults, friendly labels.

One function validates every write path (admin call, ``stm`` command, import),
so a value outside its range never reaches the database (DESIGN decision 11).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs

from stm_core.errors import ValidationError
from stm_core.settings import (
    CACHE_POLICIES,
    CONTENT_DEPTH_RANGE,
    DEFAULT_CONTENT_DEPTH,
    DEFAULT_NUDGE_DEPTH,
    DEFAULT_REFRESH_CADENCE,
    NUDGE_DEPTH_RANGE,
    PROMPT_BUDGET_RANGE,
    REFRESH_CADENCE_RANGE,
    Settings,
)
from stm_core.storage.records import ServerSettings


@attrs.frozen(kw_only=True)
class ServerParams:
    """A server's effective parameters; ``defaults`` names those not stored."""

    server_id: str
    refresh_cadence: int
    render_mode: str
    crude_message_count: int
    nudge_injection_depth: int
    content_injection_depth: int
    #: ``"freshness"`` (default) or ``"stable"`` (provider prompt caches).
    cache_policy: str = "freshness"
    #: Tokens of a turn's STM block (0: no budget).
    prompt_budget_tokens: int = 0
    defaults: frozenset[str] = frozenset()
    #: Friendly wording per parameter ("every turn", "tail", ...).
    labels: dict[str, str] = attrs.field(factory=dict)
    #: Stored values not in effect (a render mode whose plugin is not
    #: installed): parameter -> the stored value. The field itself shows the
    #: value builds use, and the parameter is listed in ``defaults``.
    unavailable: dict[str, str] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "server_id": self.server_id,
            "refresh_cadence": self.refresh_cadence,
            "render_mode": self.render_mode,
            "crude_message_count": self.crude_message_count,
            "nudge_injection_depth": self.nudge_injection_depth,
            "content_injection_depth": self.content_injection_depth,
            "cache_policy": self.cache_policy,
            "prompt_budget_tokens": self.prompt_budget_tokens,
            "defaults": sorted(self.defaults),
            "labels": dict(self.labels),
            "unavailable": dict(self.unavailable),
        }


#: The per-server parameters, in display order.
PARAM_NAMES: tuple[str, ...] = (
    "refresh_cadence",
    "render_mode",
    "crude_message_count",
    "nudge_injection_depth",
    "content_injection_depth",
    "cache_policy",
    "prompt_budget_tokens",
)
#: Parameters whose value is one of a fixed set of names.
CHOICES: dict[str, tuple[str, ...]] = {"cache_policy": CACHE_POLICIES}


def int_ranges(settings: Settings) -> dict[str, tuple[int, int]]:
    """Inclusive ranges of the integer parameters."""
    return {
        "refresh_cadence": REFRESH_CADENCE_RANGE,
        "crude_message_count": (1, settings.max_messages_per_channel),
        "nudge_injection_depth": NUDGE_DEPTH_RANGE,
        "content_injection_depth": CONTENT_DEPTH_RANGE,
        "prompt_budget_tokens": PROMPT_BUDGET_RANGE,
    }


def validate_params(changes: Mapping[str, object], *, settings: Settings,
                    render_modes: Collection[str]) -> dict[str, int | str]:
    """Check every given parameter; return them unchanged, or raise
    :class:`ValidationError` naming the first bad one and what is allowed."""
    ranges = int_ranges(settings)
    checked: dict[str, int | str] = {}
    for name, value in changes.items():
        if name == "render_mode":
            allowed = ", ".join(sorted(render_modes))
            if not isinstance(value, str) or value not in render_modes:
                raise ValidationError(f"render_mode must be one of {allowed}, got {value!r}",
                                      field=name, allowed=allowed)
            checked[name] = value
        elif name in CHOICES:
            allowed = ", ".join(CHOICES[name])
            if not isinstance(value, str) or value not in CHOICES[name]:
                raise ValidationError(f"{name} must be one of {allowed}, got {value!r}",
                                      field=name, allowed=allowed)
            checked[name] = value
        elif name in ranges:
            low, high = ranges[name]
            allowed = f"an integer from {low} to {high}"
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{name} must be {allowed}, got {value!r}",
                                      field=name, allowed=allowed)
            if not low <= value <= high:
                raise ValidationError(f"{name} must be {allowed}, got {value}",
                                      field=name, allowed=allowed)
            checked[name] = value
        else:
            allowed = ", ".join(PARAM_NAMES)
            raise ValidationError(f"unknown server parameter {name!r}; allowed: {allowed}",
                                  field=name, allowed=allowed)
    return checked


def defaults(settings: Settings) -> dict[str, int | str]:
    return {
        "refresh_cadence": DEFAULT_REFRESH_CADENCE,
        "render_mode": settings.render_mode,
        "crude_message_count": settings.default_crude_message_count,
        "nudge_injection_depth": DEFAULT_NUDGE_DEPTH,
        "content_injection_depth": DEFAULT_CONTENT_DEPTH,
        "cache_policy": settings.cache_policy,
        "prompt_budget_tokens": settings.prompt_budget_tokens,
    }


def param_label(name: str, value: int | str) -> str:
    """How a person reads a parameter value ("every turn", "tail", ...)."""
    if name == "refresh_cadence":
        return "every turn" if value == 1 else f"every {value} turns"
    if name == "crude_message_count":
        return "1 message" if value == 1 else f"{value} messages"
    if name == "nudge_injection_depth":
        return _depth_label(value)
    if name == "content_injection_depth":
        return "anchored (default)" if value == -1 else _depth_label(value)
    if name == "cache_policy":
        return ("prompt-cache stable" if value == "stable"
                else "fresh ages and placement (default)")
    if name == "prompt_budget_tokens":
        return "no budget" if value == 0 else f"{value} tokens"
    return str(value)


def _depth_label(value: int | str) -> str:
    if value == 0:
        return "tail"
    if value == 1:
        return "before the last turn"
    return f"before the last {value} turns"


def effective_params(stored: ServerSettings, settings: Settings, *,
                     render_modes: Collection[str] | None = None) -> ServerParams:
    """The values builds use: stored ones, defaults for the unset ones.

    A stored render mode that no installed plugin registers (``render_modes``)
    is not in effect: builds use the default, so that is what is reported,
    and the stored key is listed in ``unavailable``.
    """
    base = defaults(settings)
    values: dict[str, int | str] = {}
    unset: set[str] = set()
    unavailable: dict[str, str] = {}
    for name in PARAM_NAMES:
        value = getattr(stored, name)
        if (name == "render_mode" and value is not None and render_modes is not None
                and value not in render_modes):
            unavailable[name] = str(value)
            value = None
        if value is None:
            unset.add(name)
            value = base[name]
        values[name] = value
    return ServerParams(
        server_id=stored.server_id,
        refresh_cadence=int(values["refresh_cadence"]),
        render_mode=str(values["render_mode"]),
        crude_message_count=int(values["crude_message_count"]),
        nudge_injection_depth=int(values["nudge_injection_depth"]),
        content_injection_depth=int(values["content_injection_depth"]),
        cache_policy=str(values["cache_policy"]),
        prompt_budget_tokens=int(values["prompt_budget_tokens"]),
        defaults=frozenset(unset),
        unavailable=unavailable,
        labels={name: param_label(name, values[name]) for name in PARAM_NAMES},
    )
