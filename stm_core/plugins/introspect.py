"""What is installed, what loaded, what failed: :func:`describe_plugins`.

Used by ``stm plugins`` and by hosts that want to log their plugin set at
start-up. Describing never raises because of a plugin: a registration hook that
raises, or two plugins claiming one key, are reported, not thrown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

import attrs
import pluggy

from stm_core.plugins.loader import error_text
from stm_core.plugins.manager import StmPluginManager
from stm_core.plugins.records import PluginKind, PluginOrigin

PluginStatus = Literal["loaded", "failed", "blocked"]

_KIND_ORDER: dict[str, int] = {"builtin": 0, "entrypoint": 1, "host": 2}


@attrs.frozen(kw_only=True)
class PluginInfo:
    """One plugin as ``stm plugins`` shows it."""

    name: str
    kind: PluginKind
    distribution: str | None
    version: str | None
    #: Hook names the plugin implements, sorted (empty unless loaded).
    hooks: tuple[str, ...]
    status: PluginStatus
    #: Why it failed or was blocked; for a loaded plugin, a conflict or a
    #: registration hook that raised.
    error: str | None = None
    #: The entry point's target, e.g. ``"stm_acme.provider"``.
    entry_point: str | None = None
    #: Keys it registers: ``"render mode acme_digest"``, ``"storage scheme memory"``...
    provides: tuple[str, ...] = ()
    #: Parts of a loaded plugin that will never run (an unmarked ``stm_...`` function).
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = attrs.asdict(self)
        data["hooks"] = list(self.hooks)
        data["provides"] = list(self.provides)
        data["warnings"] = list(self.warnings)
        return data


@attrs.frozen(kw_only=True)
class Conflict:
    """Two or more plugins claiming the same registry key."""

    what: str
    key: str
    plugins: tuple[str, ...]

    @property
    def message(self) -> str:
        owners = " and ".join(repr(p) for p in self.plugins)
        return f"{self.what} {self.key!r} is registered by more than one plugin: {owners}"

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "key": self.key, "plugins": list(self.plugins),
                "message": self.message}


def _storage_keys(record: Any) -> Iterable[tuple[str, str]]:
    return (("storage scheme", s) for s in record.schemes)


def _render_keys(record: Any) -> Iterable[tuple[str, str]]:
    return (("render mode", record.key),)


def _format_keys(record: Any) -> Iterable[tuple[str, str]]:
    yield ("tool format", record.key)
    for provider in sorted(record.providers):
        yield ("tool format provider", provider)


#: Registration hooks whose records claim keys that must be unique.
REGISTRIES: dict[str, Callable[[Any], Iterable[tuple[str, str]]]] = {
    "stm_register_storage_adapters": _storage_keys,
    "stm_register_render_modes": _render_keys,
    "stm_register_tool_formats": _format_keys,
}
#: Claims not worth listing under "provides" (they repeat a tool format).
_QUIET_CLAIMS = frozenset({"tool format provider"})


@attrs.frozen(kw_only=True)
class _Claims:
    keys: tuple[tuple[str, str], ...] = ()
    error: str | None = None


def _claims_of(pm: pluggy.PluginManager, plugin: object) -> _Claims:
    """The keys a plugin's registration hooks claim. Calls only those hooks'
    implementations, which must be cheap and pure."""
    keys: list[tuple[str, str]] = []
    for caller in pm.get_hookcallers(plugin) or ():
        key_of = REGISTRIES.get(caller.name)
        if key_of is None:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            try:
                for record in cast(Iterable[Any], impl.function() or ()):
                    keys.extend(key_of(record))
            except Exception as exc:  # describe, never crash
                return _Claims(keys=tuple(keys),
                               error=f"{caller.name} raised {error_text(exc)}")
    return _Claims(keys=tuple(keys))


def find_conflicts(pm: StmPluginManager) -> list[Conflict]:
    """Keys claimed by more than one registered plugin (what the hook facade
    would refuse with a :class:`~stm_core.errors.PluginError`)."""
    owners: dict[tuple[str, str], list[str]] = {}
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # a blocked name
            continue
        for claim in dict.fromkeys(_claims_of(pm, plugin).keys):
            owners.setdefault(claim, []).append(name)
    return [Conflict(what=what, key=key, plugins=tuple(names))
            for (what, key), names in sorted(owners.items()) if len(names) > 1]


def describe_plugins(pm: StmPluginManager) -> list[PluginInfo]:
    """Every plugin the manager knows of: loaded ones (built-ins, entry points,
    host code, in that order), then failed ones, then blocked ones."""
    conflicts = find_conflicts(pm)
    loaded: list[PluginInfo] = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        origin = pm.origins.get(name) or PluginOrigin(name=name, kind="host")
        claims = _claims_of(pm, plugin)
        problems = [c.message for c in conflicts if name in c.plugins]
        if claims.error:
            problems.append(claims.error)
        loaded.append(_info(origin, status="loaded", error="; ".join(problems) or None,
                            hooks=tuple(sorted(c.name for c in pm.get_hookcallers(plugin) or ())),
                            provides=tuple(f"{what} {key}" for what, key in claims.keys
                                           if what not in _QUIET_CLAIMS),
                            warnings=tuple(pm.plugin_warnings.get(name, ()))))
    loaded.sort(key=lambda info: _KIND_ORDER[info.kind])  # stable: keeps registration order
    failed = [_info(f.origin, status="failed", error=f"{f.stage}: {f.error}")
              for f in pm.load_failures]
    blocked = [_info(s.origin, status="blocked", error=s.reason) for s in pm.skipped]
    return loaded + failed + blocked


def _info(origin: PluginOrigin, *, status: PluginStatus, error: str | None,
          hooks: tuple[str, ...] = (), provides: tuple[str, ...] = (),
          warnings: tuple[str, ...] = ()) -> PluginInfo:
    return PluginInfo(name=origin.name, kind=origin.kind, distribution=origin.distribution,
                      version=origin.version, hooks=hooks, status=status, error=error,
                      entry_point=origin.entry_point, provides=provides, warnings=warnings)
