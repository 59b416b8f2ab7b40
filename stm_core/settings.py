"""Process-wide settings: the spec's environment variables, or a ``Settings`` in code.

``Settings.from_env()`` reads the variables below; a host that configures in code
builds ``Settings(...)`` directly (``attrs.evolve`` to change one field). Both
check every value against its rule in :data:`RULES` (type and range).

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
STM_JANITOR_PAUSE_MS                            40      pause between batches, so turns never stall
STM_SQLITE_SYNCHRONOUS                          NORMAL  SQLite ``synchronous`` (NORMAL or FULL)
STM_SQLITE_INLINE_WRITES                        1       SQLite: a lone turn write runs on the loop
STM_CROSS_PROCESS_INVALIDATION                  1       PostgreSQL: announce writes, hear others'
STM_CACHE_MAX_AGE_SECONDS                       (auto)  reload views this old (300 if listening)
STM_LISTENER_CHECK_SECONDS                      5       how often the listener checks its connection
STM_DB_TIMEOUT_SECONDS                          10      PostgreSQL connect and statement timeout
STM_LISTEN_URL                                  (none)  direct PostgreSQL URL to LISTEN on
STM_UNHEARD_CACHE_MAX_AGE_SECONDS               5       view age when notices go unheard
STM_DEFAULT_RENDER_MODE                         (none)  render mode of servers that chose none
STM_MEMORY_HISTORY_REVISIONS                    10      earlier revisions kept per memory (0-100)
STM_PROMPT_BUDGET_TOKENS                        2000    tokens of the STM block per turn (0: none)
STM_MAX_STORED_LINE_LENGTH                      1000    chars kept per stored raw line (marked)
STM_LONG_TERM_MEMORY_TOOL                       (none)  host's tool that saves a long-term memory
STM_LONG_TERM_MEMORY_UPDATE_TOOL                (none)  host's tool that edits a long-term memory
STM_STRICT_PROVIDERS                            0       an unknown provider key is an error
STM_REQUIRE_AUTHOR_IDS                          0       a user line without author id is an error
=============================================== ======= =====================================
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from stm_core.errors import ConfigurationError

HOUR_MS = 3_600_000
#: Safety expiry of cached views while a cross-process listener runs.
DEFAULT_LISTENING_MAX_AGE_MS = 300_000
MINUTE_MS = 60_000
DAY_MS = 86_400_000
#: What a render mode key may look like (the plugins decide which exist).
RENDER_MODE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
#: A prompt budget in tokens, the process's or a server's (0: none).
PROMPT_BUDGET_RANGE = (0, 1_000_000)
#: Room for the truncation mark and some text.
MIN_STORED_LINE_LENGTH = 40
#: What every provider accepts as a function name.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def parse_flag(raw: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); anything else is refused."""
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


@attrs.frozen(kw_only=True)
class Rule:
    """One setting: its variable, how the text is read, which values are allowed.

    Every setting has one rule in :data:`RULES`; ``Settings`` and
    ``Settings.from_env`` both check against it, so a new setting gets its
    range check, its error message and its test case by adding one line there.
    ``low_open`` excludes ``low`` itself (``more than 0``).
    """

    var: str
    kind: Literal["int", "float", "text", "key", "tool", "flag", "choice"]
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False

    @property
    def allowed(self) -> str:
        if self.kind == "flag":
            return "1 or 0 (true/false, yes/no, on/off)"
        if self.kind == "choice":
            return " or ".join(self.choices)
        if self.kind == "text":
            return "non-empty text"
        if self.kind == "key":
            return "a key of letters, digits, '_', '-' or '.' (at most 64)"
        if self.kind == "tool":
            return "a tool name of 1 to 64 letters, digits, '_' or '-'"
        what = "an integer" if self.kind == "int" else "a number"
        low = "" if self.low is None else (
            f" more than {_number(self.low)}" if self.low_open
            else f" from {_number(self.low)}")
        high = "" if self.high is None else (
            f" to {_number(self.high)}" if low and not self.low_open
            else f" and at most {_number(self.high)}")
        return f"{what}{low}{high}"

    def parse(self, raw: str) -> object:
        """The typed value of the variable's text; ``ValueError`` when unreadable."""
        text = raw.strip()
        if self.kind == "int":
            return int(text, 10)
        if self.kind == "float":
            return float(text)
        if self.kind == "flag":
            return parse_flag(text)
        return text

    def check(self, value: object, *, typed: str | None = None) -> None:
        """Raise :class:`ConfigurationError` unless ``value`` is allowed;
        ``typed`` is the variable's text, shown instead of the parsed value."""
        if value is None and self.optional:
            return
        if not self._accepts(value):
            shown = repr(value) if typed is None else repr(typed)
            raise ConfigurationError(
                f"{self.var}={shown} is out of range; allowed: {self.allowed}")

    def _accepts(self, value: object) -> bool:
        if self.kind == "flag":
            return isinstance(value, bool)
        if self.kind == "text":
            return isinstance(value, str) and bool(value.strip())
        if self.kind == "key":
            return isinstance(value, str) and RENDER_MODE_KEY.fullmatch(value) is not None
        if self.kind == "tool":
            return isinstance(value, str) and _TOOL_NAME.fullmatch(value) is not None
        if self.kind == "choice":  # as listed, or upper case for upper-case choices
            return isinstance(value, str) and (value in self.choices
                                               or value.upper() in self.choices)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        if not math.isfinite(value):  # nan and inf
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else str(value)


def _int(var: str, low: int, high: int) -> Rule:
    return Rule(var=var, kind="int", low=low, high=high)


def _positive(var: str, high: float, *, optional: bool = False) -> Rule:
    """A duration or budget: more than 0 (0 would mean "never" or "always")."""
    return Rule(var=var, kind="float", low=0, low_open=True, high=high, optional=optional)


#: Per-server prompt-cache policies (docs/concepts.md, "Prompt caches").
CACHE_POLICIES = ("freshness", "stable")
DEFAULT_CACHE_POLICY = "freshness"

_YEAR_HOURS = 8760
#: Range of ``unheard_cache_max_age_seconds`` (seconds).
UNHEARD_CACHE_MAX_AGE_RANGE = (0.1, 300.0)
#: Settings field -> its rule. Upper bounds keep every derived millisecond
#: figure a 64-bit integer and every loop finite; they are far above any use.
RULES: dict[str, Rule] = {
    "default_crude_message_count": _int("SHORT_TERM_MEMORY_DEFAULT_CRUDE_MESSAGE_COUNT", 1, 1000),
    "max_other_channels": _int("SHORT_TERM_MEMORY_MAX_OTHER_CHANNELS", 0, 1000),
    "ttl_hours": _positive("SHORT_TERM_MEMORY_TTL_HOURS", _YEAR_HOURS),
    "summary_ttl_hours": _positive("SHORT_TERM_MEMORY_SUMMARY_TTL_HOURS", _YEAR_HOURS),
    "max_summary_length": _int("SHORT_TERM_MEMORY_MAX_SUMMARY_LENGTH", 1, 100_000),
    "max_messages_per_channel": _int("SHORT_TERM_MEMORY_MAX_MESSAGES_PER_CHANNEL", 1, 1000),
    "max_categories": _int("STM_MAX_CATEGORIES", 1, 50),
    "janitor_retention_days": _positive("STM_JANITOR_RETENTION_DAYS", 36_500),
    "fresh_window_minutes": Rule(var="STM_FRESH_WINDOW_MINUTES", kind="float", low=0,
                                 high=_YEAR_HOURS * 60),
    "fresh_injection_depth": _int("STM_FRESH_INJECTION_DEPTH", 0, 20),
    "database_url": Rule(var="STM_DATABASE_URL", kind="text", optional=True),
    "cache_max_servers": _int("STM_CACHE_MAX_SERVERS", 1, 10_000_000),
    "cache_max_users": _int("STM_CACHE_MAX_USERS", 1, 10_000_000),
    "janitor_interval_hours": _positive("STM_JANITOR_INTERVAL_HOURS", _YEAR_HOURS),
    "janitor_batch_size": _int("STM_JANITOR_BATCH_SIZE", 1, 1_000_000),
    "janitor_pause_ms": _int("STM_JANITOR_PAUSE_MS", 0, 60_000),
    "janitor_batch_budget_ms": _positive("STM_JANITOR_BATCH_BUDGET_MS", 60_000),
    "sqlite_synchronous": Rule(var="STM_SQLITE_SYNCHRONOUS", kind="choice",
                               choices=("NORMAL", "FULL")),
    "sqlite_inline_writes": Rule(var="STM_SQLITE_INLINE_WRITES", kind="flag"),
    "cross_process_invalidation": Rule(var="STM_CROSS_PROCESS_INVALIDATION", kind="flag"),
    "cache_max_age_seconds": _positive("STM_CACHE_MAX_AGE_SECONDS", _YEAR_HOURS * 3600,
                                       optional=True),
    "listener_check_seconds": _positive("STM_LISTENER_CHECK_SECONDS", 3600),
    "db_timeout_seconds": _positive("STM_DB_TIMEOUT_SECONDS", 3600),
    "cache_max_rows_per_view": _int("STM_CACHE_MAX_ROWS_PER_VIEW", 1, 10_000_000),
    "default_render_mode": Rule(var="STM_DEFAULT_RENDER_MODE", kind="key", optional=True),
    "default_cache_policy": Rule(var="STM_DEFAULT_CACHE_POLICY", kind="choice",
                                 choices=CACHE_POLICIES, optional=True),
    "memory_history_revisions": _int("STM_MEMORY_HISTORY_REVISIONS", 0, 100),
    "listen_url": Rule(var="STM_LISTEN_URL", kind="text", optional=True),
    "unheard_cache_max_age_seconds": Rule(
        var="STM_UNHEARD_CACHE_MAX_AGE_SECONDS", kind="float",
        low=UNHEARD_CACHE_MAX_AGE_RANGE[0], high=UNHEARD_CACHE_MAX_AGE_RANGE[1]),
    "prompt_budget_tokens": _int("STM_PROMPT_BUDGET_TOKENS", *PROMPT_BUDGET_RANGE),
    "max_stored_line_length": _int("STM_MAX_STORED_LINE_LENGTH", MIN_STORED_LINE_LENGTH,
                                   1_000_000),
    "long_term_memory_tool": Rule(var="STM_LONG_TERM_MEMORY_TOOL", kind="tool", optional=True),
    "long_term_memory_update_tool": Rule(var="STM_LONG_TERM_MEMORY_UPDATE_TOOL", kind="tool",
                                         optional=True),
    "strict_providers": Rule(var="STM_STRICT_PROVIDERS", kind="flag"),
    "require_author_ids": Rule(var="STM_REQUIRE_AUTHOR_IDS", kind="flag"),
}


def _in_range(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    RULES[attribute.name].check(value)


@attrs.frozen(kw_only=True)
class Settings:
    """Every field is checked against its :data:`RULES` entry when built."""

    default_crude_message_count: int = attrs.field(default=6, validator=_in_range)
    max_other_channels: int = attrs.field(default=3, validator=_in_range)
    ttl_hours: float = attrs.field(default=12.0, validator=_in_range)
    summary_ttl_hours: float = attrs.field(default=24.0, validator=_in_range)
    max_summary_length: int = attrs.field(default=1500, validator=_in_range)
    max_messages_per_channel: int = attrs.field(default=10, validator=_in_range)
    max_categories: int = attrs.field(default=5, validator=_in_range)
    janitor_retention_days: float = attrs.field(default=90.0, validator=_in_range)
    fresh_window_minutes: float = attrs.field(default=60.0, validator=_in_range)
    fresh_injection_depth: int = attrs.field(default=2, validator=_in_range)
    database_url: str | None = attrs.field(default=None, validator=_in_range)
    cache_max_servers: int = attrs.field(default=2000, validator=_in_range)
    cache_max_users: int = attrs.field(default=5000, validator=_in_range)
    #: Rows (the newest) and known-absent keys kept per cached server or user view.
    cache_max_rows_per_view: int = attrs.field(default=1000, validator=_in_range)
    janitor_interval_hours: float = attrs.field(default=24.0, validator=_in_range)
    janitor_batch_size: int = attrs.field(default=1000, validator=_in_range)
    janitor_pause_ms: int = attrs.field(default=40, validator=_in_range)
    janitor_batch_budget_ms: float = attrs.field(default=3.0, validator=_in_range)
    sqlite_synchronous: str = attrs.field(default="NORMAL", validator=_in_range)
    #: On SQLite, a turn's write (or a tool write) runs on the event loop's
    #: thread when no other write waits, instead of making two thread hops;
    #: the loop's other ready callbacks wait for one such write at most.
    #: Never with ``sqlite_synchronous="FULL"``, whose every commit waits for
    #: the disk (docs/storage.md, "SQLite").
    sqlite_inline_writes: bool = attrs.field(default=True, validator=_in_range)
    #: On PostgreSQL, every write NOTIFYs what it changed and the store LISTENs
    #: for other processes' writes (several processes share one database).
    cross_process_invalidation: bool = attrs.field(default=True, validator=_in_range)
    #: Cached views older than this are reloaded. ``None``: 300 s while a
    #: listener runs, never otherwise (a single process needs no expiry).
    cache_max_age_seconds: float | None = attrs.field(default=None, validator=_in_range)
    listener_check_seconds: float = attrs.field(default=5.0, validator=_in_range)
    db_timeout_seconds: float = attrs.field(default=10.0, validator=_in_range)
    #: PostgreSQL: the URL the listening connection uses, direct to the
    #: database, when statements go through a transaction pooler (where
    #: LISTEN hears nothing). ``None``: listen on the statement URL.
    listen_url: str | None = attrs.field(default=None, validator=_in_range)
    #: How old a cached view may get while the listener's self-check found that
    #: change notices do not arrive (e.g. LISTEN through a transaction pooler).
    unheard_cache_max_age_seconds: float = attrs.field(default=5.0, validator=_in_range)
    #: Render mode of servers that set none (``None``: ``crude_summary``). Any
    #: registered mode's key; checked against the plugins when a store opens.
    default_render_mode: str | None = attrs.field(default=None, validator=_in_range)
    #: The whole short-term-memory block of a turn (memory items and nudge) is
    #: held to this many tokens (``stm_token_counter``); 0 turns the budget off.
    #: A server may set its own (``prompt_budget_tokens`` server parameter).
    prompt_budget_tokens: int = attrs.field(default=2000, validator=_in_range)
    #: A raw line is stored with at most this many characters, the end cut and
    #: marked with :data:`stm_core.text.truncation.LINE_TRUNCATION_MARK`.
    max_stored_line_length: int = attrs.field(default=1000, validator=_in_range)
    #: The host's long-term-memory tools (the ``{memory_tool}`` and
    #: ``{memory_update_tool}`` macros). Unset, the default nudge and tool
    #: description name no long-term tool (DESIGN decision 15).
    long_term_memory_tool: str | None = attrs.field(default=None, validator=_in_range)
    long_term_memory_update_tool: str | None = attrs.field(default=None, validator=_in_range)
    #: A turn whose provider no tool-format rule knows raises ``UnknownProvider``
    #: from ``tool_schema`` instead of getting the ``"openai"`` format with a
    #: warning (docs/host-guide.md, "The tool-format rule").
    strict_providers: bool = attrs.field(default=False, validator=_in_range)

    #: Prompt-cache policy of servers that set none, and of direct messages
    #: (``None``: ``freshness``); see docs/concepts.md, "Prompt caches".
    default_cache_policy: str | None = attrs.field(default=None, validator=_in_range)

    #: Earlier summary/category revisions kept per memory row for undo (0: none).
    memory_history_revisions: int = attrs.field(default=10, validator=_in_range)

    #: ``record_turn`` refuses (``ValidationError``) a user line it would store
    #: without an author id, instead of warning once per process: erasure and
    #: export cannot find such a line (docs/privacy.md).
    require_author_ids: bool = attrs.field(default=False, validator=_in_range)

    # Derived values are worked out once per settings object (each turn reads
    # several): cached_property keeps them in a slot of this frozen class.
    @functools.cached_property
    def render_mode(self) -> str:
        """The render mode of servers that chose none."""
        return self.default_render_mode or DEFAULT_RENDER_MODE

    @functools.cached_property
    def cache_policy(self) -> str:
        """The prompt-cache policy of servers that chose none and of DMs."""
        return self.default_cache_policy or DEFAULT_CACHE_POLICY

    @functools.cached_property
    def crude_ttl_ms(self) -> int:
        return int(self.ttl_hours * HOUR_MS)

    @functools.cached_property
    def summary_ttl_ms(self) -> int:
        return int(self.summary_ttl_hours * HOUR_MS)

    @functools.cached_property
    def longest_ttl_ms(self) -> int:
        return max(self.crude_ttl_ms, self.summary_ttl_ms)

    @functools.cached_property
    def fresh_window_ms(self) -> int:
        return int(self.fresh_window_minutes * MINUTE_MS)

    @functools.cached_property
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

        Raises :class:`ConfigurationError` naming the variable, its value and
        the allowed range when a value cannot be read or is out of range.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, rule in RULES.items():
            raw = env.get(rule.var)
            if raw is None or raw.strip() == "":
                continue
            try:
                value = rule.parse(raw)
            except ValueError:
                raise ConfigurationError(
                    f"{rule.var}={raw!r} is not valid; allowed: {rule.allowed}") from None
            rule.check(value, typed=raw)
            values[name] = value
        return cls(**values)


#: Variable -> Settings field, for documentation and lookups.
ENV_VARS: dict[str, str] = {rule.var: name for name, rule in RULES.items()}

#: Ranges of the per-server parameters (admin API, CLI, import all enforce them).
REFRESH_CADENCE_RANGE = (1, 100)
NUDGE_DEPTH_RANGE = (0, 20)
CONTENT_DEPTH_RANGE = (-1, 20)
RENDER_MODES_BUILTIN = ("crude_summary", "supersede")
DEFAULT_REFRESH_CADENCE = 5
DEFAULT_RENDER_MODE = "crude_summary"
DEFAULT_NUDGE_DEPTH = 2
DEFAULT_CONTENT_DEPTH = -1
#: Max chars of an override or category text typed by an admin.
MAX_PROMPT_OVERRIDE_LENGTH = 4000
MAX_CATEGORY_LINE_LENGTH = 1000
