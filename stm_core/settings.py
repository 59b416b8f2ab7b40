"""Process-wide settings: the spec's environment variables, or a ``Settings`` in code.

``Settings.from_env()`` reads the variables below; a host that configures in code
builds ``Settings(...)`` directly (``attrs.evolve`` to change one field).

=============================================== ======= =====================================
variable                                        default meaning
=============================================== ======= =====================================
SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT   6       crude lines rendered when a server set none
SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS            3       cap on other-channel memories
SHORT_TERM_MEMORY_TTL_HOURS                     12      TTL of entries without a summary
SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS             24      TTL of entries with a summary
SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH            1500    max chars of a summary or category value
SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL      10      crude messages stored per channel
STM_MAX_CATEGORIES                              5       categories per server
STM_JANITOR_RETENTION_DAYS                      90      rows untouched this long are purged
STM_FRESH_WINDOW_MINUTES                        60      a memory this young counts as fresh
STM_FRESH_INJECTION_DEPTH                       2       ceiling depth of a fresh content block
STM_DATABASE_URL                                (none)  database URL for the ``stm`` command
STM_CACHE_MAX_SERVERS                           2000    servers kept in the cache (LRU)
STM_CACHE_MAX_USERS                             5000    users kept in the cache (LRU)
STM_CACHE_MAX_ROWS_PER_VIEW                     1000    newest rows (and absent keys) per view
STM_JANITOR_INTERVAL_HOURS                      24      time between janitor runs
STM_JANITOR_BATCH_SIZE                          1000    most rows deleted per janitor batch
STM_JANITOR_BATCH_BUDGET_MS                     3       batches shrink to stay under this long
STM_JANITOR_PAUSE_MS                            20      pause between batches, so turns never stall
STM_SQLITE_SYNCHRONOUS                          NORMAL  SQLite ``synchronous`` (NORMAL or FULL)
STM_CROSS_PROCESS_INVALIDATION                  1       PostgreSQL: announce writes, hear others'
STM_CACHE_MAX_AGE_SECONDS                       (auto)  reload views this old (300 if listening)
STM_LISTENER_CHECK_SECONDS                      5       how often the listener checks its connection
STM_DB_TIMEOUT_SECONDS                          10      PostgreSQL connect and statement timeout
STM_DEFAULT_RENDER_MODE                         (none)  render mode of servers that chose none

STM_MEMORY_HISTORY_REVISIONS                    10      earlier revisions kept per memory (0-100)
=============================================== ======= =====================================
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from stm_core.errors import ConfigurationError

HOUR_MS = 3_600_000
#: Safety expiry of cached views while a cross-process listener runs.
DEFAULT_LISTENING_MAX_AGE_MS = 300_000
MINUTE_MS = 60_000
DAY_MS = 86_400_000
#: What a render mode key may look like (the plugins decide which exist).
RENDER_MODE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def _positive(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 1:
        raise ConfigurationError(f"{attribute.name} must be at least 1, got {value}")


def _non_negative(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise ConfigurationError(f"{attribute.name} must be 0 or more, got {value}")


@attrs.frozen(kw_only=True)
class Settings:
    default_crude_message_count: int = attrs.field(default=6, validator=_positive)
    max_other_channels: int = attrs.field(default=3, validator=_non_negative)
    ttl_hours: float = 12.0
    summary_ttl_hours: float = 24.0
    max_summary_length: int = attrs.field(default=1500, validator=_positive)
    max_messages_per_channel: int = attrs.field(default=10, validator=_positive)
    max_categories: int = attrs.field(default=5, validator=_positive)
    janitor_retention_days: float = 90.0
    fresh_window_minutes: float = 60.0
    fresh_injection_depth: int = attrs.field(default=2, validator=_non_negative)
    database_url: str | None = None
    cache_max_servers: int = attrs.field(default=2000, validator=_positive)
    cache_max_users: int = attrs.field(default=5000, validator=_positive)
    #: Rows (the newest) and known-absent keys kept per cached server or user view.
    cache_max_rows_per_view: int = attrs.field(default=1000, validator=_positive)
    janitor_interval_hours: float = 24.0
    janitor_batch_size: int = attrs.field(default=1000, validator=_positive)
    janitor_pause_ms: int = attrs.field(default=20, validator=_non_negative)
    janitor_batch_budget_ms: float = 3.0
    sqlite_synchronous: str = attrs.field(default="NORMAL")
    #: On PostgreSQL, every write NOTIFYs what it changed and the store LISTENs
    #: for other processes' writes (several processes share one database).
    cross_process_invalidation: bool = True
    #: Cached views older than this are reloaded. ``None``: 300 s while a
    #: listener runs, never otherwise (a single process needs no expiry).
    cache_max_age_seconds: float | None = attrs.field(default=None)
    listener_check_seconds: float = attrs.field(default=5.0)
    db_timeout_seconds: float = attrs.field(default=10.0)
    #: Render mode of servers that set none (``None``: ``crude_summary``). Any
    #: registered mode's key; checked against the plugins when a store opens.
    default_render_mode: str | None = attrs.field(default=None)

    @default_render_mode.validator
    def _check_render_mode(self, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and (not isinstance(value, str)
                                  or not RENDER_MODE_KEY.fullmatch(value)):
            raise ConfigurationError(
                f"STM_DEFAULT_RENDER_MODE must be a render mode key (letters, digits, '_', "
                f"'-' or '.'), got {value!r}")

    #: Prompt-cache policy of servers that set none, and of direct messages
    #: (``None``: ``freshness``); see docs/concepts.md, "Prompt caches".
    default_cache_policy: str | None = attrs.field(default=None)

    @default_cache_policy.validator
    def _check_cache_policy(self, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and value not in CACHE_POLICIES:
            raise ConfigurationError(f"STM_DEFAULT_CACHE_POLICY must be one of "
                                     f"{', '.join(CACHE_POLICIES)}, got {value!r}")

    #: Earlier summary/category revisions kept per memory row for undo (0: none).
    memory_history_revisions: int = attrs.field(default=10)

    @memory_history_revisions.validator
    def _check_history(self, attribute: attrs.Attribute[Any], value: int) -> None:
        low, high = MEMORY_HISTORY_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigurationError(f"STM_MEMORY_HISTORY_REVISIONS must be a whole number "
                                     f"from {low} to {high}, got {value!r}")

    @cache_max_age_seconds.validator
    def _check_max_age(self, attribute: attrs.Attribute[Any], value: float | None) -> None:
        if value is not None and value <= 0:
            raise ConfigurationError(
                f"STM_CACHE_MAX_AGE_SECONDS must be more than 0, got {value}")

    @listener_check_seconds.validator
    @db_timeout_seconds.validator
    def _check_seconds(self, attribute: attrs.Attribute[Any], value: float) -> None:
        if value <= 0:
            raise ConfigurationError(f"{attribute.name} must be more than 0, got {value}")

    @sqlite_synchronous.validator
    def _check_sync(self, attribute: attrs.Attribute[Any], value: str) -> None:
        if value.upper() not in {"NORMAL", "FULL"}:
            raise ConfigurationError(
                f"STM_SQLITE_SYNCHRONOUS must be NORMAL or FULL, got {value!r}")

    @property
    def render_mode(self) -> str:
        """The render mode of servers that chose none."""
        return self.default_render_mode or DEFAULT_RENDER_MODE

    @property
    def cache_policy(self) -> str:
        """The prompt-cache policy of servers that chose none and of DMs."""
        return self.default_cache_policy or DEFAULT_CACHE_POLICY

    @property
    def crude_ttl_ms(self) -> int:
        return int(self.ttl_hours * HOUR_MS)

    @property
    def summary_ttl_ms(self) -> int:
        return int(self.summary_ttl_hours * HOUR_MS)

    @property
    def longest_ttl_ms(self) -> int:
        return max(self.crude_ttl_ms, self.summary_ttl_ms)

    @property
    def fresh_window_ms(self) -> int:
        return int(self.fresh_window_minutes * MINUTE_MS)

    @property
    def retention_ms(self) -> int:
        return int(self.janitor_retention_days * DAY_MS)

    def cache_max_age_ms(self, *, listening: bool) -> int | None:
        """How old a cached view may get, or ``None`` for no limit."""
        if self.cache_max_age_seconds is not None:
            return int(self.cache_max_age_seconds * 1000)
        return DEFAULT_LISTENING_MAX_AGE_MS if listening else None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from environment variables; unset ones keep their default.

        Raises :class:`ConfigurationError` naming the variable when a value
        cannot be parsed or is out of range.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for var, (name, parse) in ENV_VARS.items():
            raw = env.get(var)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[name] = parse(raw.strip())
            except ValueError:
                raise ConfigurationError(
                    f"{var}={raw!r} is not a valid {parse.__name__}") from None
        try:
            return cls(**values)
        except ConfigurationError as exc:
            raise ConfigurationError(f"invalid environment: {exc}") from None


def _str(raw: str) -> str:
    return raw


def _flag(raw: str) -> bool:
    value = raw.lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


_flag.__name__ = "flag (1 or 0)"


ENV_VARS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT": ("default_crude_message_count", int),
    "SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS": ("max_other_channels", int),
    "SHORT_TERM_MEMORY_TTL_HOURS": ("ttl_hours", float),
    "SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS": ("summary_ttl_hours", float),
    "SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH": ("max_summary_length", int),
    "SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL": ("max_messages_per_channel", int),
    "STM_MAX_CATEGORIES": ("max_categories", int),
    "STM_JANITOR_RETENTION_DAYS": ("janitor_retention_days", float),
    "STM_FRESH_WINDOW_MINUTES": ("fresh_window_minutes", float),
    "STM_FRESH_INJECTION_DEPTH": ("fresh_injection_depth", int),
    "STM_DATABASE_URL": ("database_url", _str),
    "STM_CACHE_MAX_SERVERS": ("cache_max_servers", int),
    "STM_CACHE_MAX_USERS": ("cache_max_users", int),
    "STM_CACHE_MAX_ROWS_PER_VIEW": ("cache_max_rows_per_view", int),
    "STM_JANITOR_INTERVAL_HOURS": ("janitor_interval_hours", float),
    "STM_JANITOR_BATCH_SIZE": ("janitor_batch_size", int),
    "STM_JANITOR_PAUSE_MS": ("janitor_pause_ms", int),
    "STM_JANITOR_BATCH_BUDGET_MS": ("janitor_batch_budget_ms", float),
    "STM_SQLITE_SYNCHRONOUS": ("sqlite_synchronous", _str),
    "STM_CROSS_PROCESS_INVALIDATION": ("cross_process_invalidation", _flag),
    "STM_CACHE_MAX_AGE_SECONDS": ("cache_max_age_seconds", float),
    "STM_LISTENER_CHECK_SECONDS": ("listener_check_seconds", float),
    "STM_DB_TIMEOUT_SECONDS": ("db_timeout_seconds", float),
    "STM_DEFAULT_RENDER_MODE": ("default_render_mode", _str),
    "STM_DEFAULT_CACHE_POLICY": ("default_cache_policy", _str),

    "STM_MEMORY_HISTORY_REVISIONS": ("memory_history_revisions", int),
}

#: Ranges of the per-server parameters (admin API, CLI, import all enforce them).
REFRESH_CADENCE_RANGE = (1, 100)
NUDGE_DEPTH_RANGE = (0, 20)
CONTENT_DEPTH_RANGE = (-1, 20)
RENDER_MODES_BUILTIN = ("crude_summary", "supersede")
MEMORY_HISTORY_RANGE = (0, 100)
#: Per-server prompt-cache policies (docs/concepts.md, "Prompt caches").
CACHE_POLICIES = ("freshness", "stable")
DEFAULT_CACHE_POLICY = "freshness"
DEFAULT_REFRESH_CADENCE = 5
DEFAULT_RENDER_MODE = "crude_summary"
DEFAULT_NUDGE_DEPTH = 2
DEFAULT_CONTENT_DEPTH = -1
#: Max chars of an override or category text typed by an admin.
MAX_PROMPT_OVERRIDE_LENGTH = 4000
MAX_CATEGORY_LINE_LENGTH = 1000
