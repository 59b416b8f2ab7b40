"""What the plugin machinery records and reads: where a plugin came from, why
one failed or was left out, and the load policy with its environment names.

Plain records with no behaviour beyond their own fields, so the manager, the
loader and the introspection can all import them without importing each other.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

from stm_core.errors import ConfigurationError
from stm_core.settings import parse_flag

#: Entry-point group third-party distributions publish plugins under.
ENTRY_POINT_GROUP = "stm"

LOAD_ENV = "STM_LOAD_PLUGINS"
DISABLED_ENV = "STM_DISABLED_PLUGINS"
STRICT_ENV = "STM_STRICT_PLUGINS"
TRACE_ENV = "STM_TRACE_PLUGINS"

PluginKind = Literal["builtin", "entrypoint", "host"]
FailureStage = Literal["import", "register", "validate"]

def normalize_name(name: str) -> str:
    """Compare names the way package indexes do: ``Stm_Acme`` == ``stm-acme``."""
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """An on/off variable; unset or blank is off, a word that is neither is refused."""
    raw = environ.get(name, "")
    if not raw.strip():
        return False
    try:
        return parse_flag(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not valid; allowed: 1 or 0 "
                                 "(true/false, yes/no, on/off)") from None


def parse_name_list(value: str) -> frozenset[str]:
    """``"a, b,,c"`` -> ``{"a", "b", "c"}``; an empty string is the empty set."""
    return frozenset(part.strip() for part in value.split(",") if part.strip())


@attrs.frozen(kw_only=True)
class PluginOrigin:
    """Where a registered (or attempted) plugin came from."""

    name: str
    kind: PluginKind
    distribution: str | None = None
    version: str | None = None
    #: The entry point's target, e.g. ``"stm_acme.provider"``.
    entry_point: str | None = None

    def describe(self) -> str:
        """``'acme_digest' (entry point stm_acme.digest of stm-acme 1.0)`` and the like."""
        if self.kind != "entrypoint":
            return f"{self.name!r} ({self.kind} plugin)"
        return (f"{self.name!r} (entry point {self.entry_point} of "
                f"{self.distribution} {self.version})")


@attrs.frozen(kw_only=True)
class PluginFailure:
    """A plugin that could not be loaded; the host carried on without it."""

    origin: PluginOrigin
    stage: FailureStage
    error: str


@attrs.frozen(kw_only=True)
class SkippedPlugin:
    """An entry point left unimported on purpose (blocked, or not allowed)."""

    origin: PluginOrigin
    reason: str


@attrs.frozen(kw_only=True)
class LoadPolicy:
    """Which entry points to load, and what a failure means.

    ``allow`` is ``None`` for "everything installed"; an empty set loads none.
    Names are entry-point names or distribution names, compared normalized.
    """

    allow: frozenset[str] | None = None
    block: frozenset[str] = frozenset()
    strict: bool = False
    #: Where the lists came from, for messages ("STM_LOAD_PLUGINS" or "allow=").
    allow_source: str = LOAD_ENV
    block_source: str = DISABLED_ENV

    @classmethod
    def build(cls, *, allow: Iterable[str] | None = None, block: Iterable[str] | None = None,
              strict: bool | None = None,
              environ: Mapping[str, str] | None = None) -> LoadPolicy:
        """Arguments win; the environment fills in what they leave as ``None``."""
        env = os.environ if environ is None else environ
        if allow is not None:
            allow_set: frozenset[str] | None = frozenset(allow)
            allow_source = "allow="
        elif LOAD_ENV in env:
            allow_set, allow_source = parse_name_list(env[LOAD_ENV]), LOAD_ENV
        else:
            allow_set, allow_source = None, LOAD_ENV
        if block is not None:
            block_set, block_source = frozenset(block), "block="
        else:
            block_set, block_source = parse_name_list(env.get(DISABLED_ENV, "")), DISABLED_ENV
        return cls(allow=allow_set, block=block_set,
                   strict=env_flag(env, STRICT_ENV) if strict is None else strict,
                   allow_source=allow_source, block_source=block_source)

    def blocks(self, *names: str | None) -> bool:
        wanted = {normalize_name(n) for n in self.block}
        return any(n is not None and normalize_name(n) in wanted for n in names)

    def allows(self, *names: str | None) -> bool:
        if self.allow is None:
            return True
        wanted = {normalize_name(n) for n in self.allow}
        return any(n is not None and normalize_name(n) in wanted for n in names)
