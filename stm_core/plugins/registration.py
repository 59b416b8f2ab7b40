"""Building a plugin manager: the hookspecs, the built-ins, then third parties.

No import-time side effects: nothing is loaded until a host (or the ``stm``
command) calls :func:`create_plugin_manager`. The order is fixed:

1. the hookspecs;
2. the built-in plugins (``DEFAULT_PLUGINS``), by the same path as any other;
3. the ``stm`` entry points, tolerantly (see :mod:`stm_core.plugins.loader`);
4. plugins the host passes in code, which are called first (pluggy calls the
   most recently registered implementation first).

Plugins registered in code, and the built-ins, must be valid: an unknown hook,
a bad hook signature or an ``async def`` implementation raises
:class:`~stm_core.errors.PluginError` (see :mod:`stm_core.plugins.checks`). Entry-point
plugins that are invalid are unregistered and recorded as failed instead,
unless strict mode is on.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import warnings
from collections.abc import Iterable, Mapping
from types import ModuleType

import pluggy

from hookspecs import PROJECT_NAME, SPEC_CLASSES
from stm_core.errors import PluginError, PluginWarning
from stm_core.plugins.checks import (
    implementation_errors,
    parameter_errors,
    unmarked_hook_functions,
    unmarked_text,
)
from stm_core.plugins.dist_scan import installed_version
from stm_core.plugins.loader import discard, error_text, fail, load_entrypoint_plugins
from stm_core.plugins.manager import StmPluginManager
from stm_core.plugins.records import (
    TRACE_ENV,
    LoadPolicy,
    PluginKind,
    PluginOrigin,
    SkippedPlugin,
    env_flag,
)

__all__ = [
    "DEFAULT_PLUGINS",
    "STM_DISTRIBUTION",
    "create_plugin_manager",
    "plugin_name",
    "register_host_plugin",
    "spec_hook_names",
    "stm_version",
    "unknown_hook_impls",
    "unknown_hooks_text",
]

#: Built-in plugins, registered by the same path as third-party ones.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "stm_plugins.sqlalchemy_storage",
    "stm_plugins.memory_storage",
    "stm_plugins.novelai",
    "stm_plugins.builtin_gates",
    "stm_plugins.default_phrasing",
    "stm_plugins.render_modes",
    "stm_plugins.default_macros",
    "stm_plugins.default_mentions",
    "stm_plugins.discord_mentions",
    "stm_plugins.slack_mentions",
    "stm_plugins.token_estimate",
    "stm_plugins.tiktoken_counter",
    "stm_plugins.privacy",
    "stm_plugins.tool_formats",
    "stm_plugins.tool_format_rule",
    "stm_plugins.default_annotations",
    "stm_plugins.default_permissions",
)

#: The distribution stm is published as (``stm`` on the package index is another
#: project); the import names stay ``stm_core``, ``stm_plugins`` and ``hookspecs``.
STM_DISTRIBUTION = "stm-core"


def create_plugin_manager(*, load_entrypoints: bool = True,
                          plugins: Iterable[object] = (),
                          builtins: bool = True,
                          allow: Iterable[str] | None = None,
                          block: Iterable[str] | None = None,
                          strict: bool | None = None,
                          trace: bool | None = None,
                          environ: Mapping[str, str] | None = None) -> StmPluginManager:
    """A fresh plugin manager.

    :param load_entrypoints: load third-party plugins from the ``stm``
        entry-point group (tolerantly; see :mod:`stm_core.plugins.loader`).
    :param plugins: plugin objects or modules the host registers in code; an
        invalid one raises :class:`~stm_core.errors.PluginError`.
    :param builtins: register the built-in plugins (tests may turn this off).
    :param allow: entry-point or distribution names to load, and no others
        (default: ``STM_LOAD_PLUGINS``; unset means all, empty means none).
    :param block: entry-point, distribution or built-in module names never to
        load (default: ``STM_DISABLED_PLUGINS``). Applied before any import.
    :param strict: a plugin that fails to load raises instead of being skipped
        (default: ``STM_STRICT_PLUGINS=1``).
    :param trace: log every hook call to the ``stm.trace`` logger (default:
        ``STM_TRACE_PLUGINS=1``).
    :param environ: where the defaults are read (default: ``os.environ``).
    """
    env = os.environ if environ is None else environ
    policy = LoadPolicy.build(allow=allow, block=block, strict=strict, environ=env)
    pm = StmPluginManager()
    pm.policy = policy
    for spec in SPEC_CLASSES:
        pm.add_hookspecs(spec)
    if env_flag(env, TRACE_ENV) if trace is None else trace:
        from stm_core.plugins.tracing import install_tracing

        install_tracing(pm)
    if builtins:
        _register_builtins(pm, policy)
    if load_entrypoints:
        load_entrypoint_plugins(pm, policy, other_names=DEFAULT_PLUGINS)
        _drop_invalid_entrypoints(pm, strict=policy.strict)
    for plugin in plugins:
        register_host_plugin(pm, plugin)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:  # a backstop: everything was checked above
        raise PluginError(f"invalid plugin set: {error_text(exc)}") from exc
    return pm


def register_host_plugin(pm: StmPluginManager, plugin: object, name: str | None = None, *,
                         kind: PluginKind = "host") -> str | None:
    """Register a plugin object or module and validate it at once.

    Code that registers a plugin is told immediately when it is wrong: a hook
    the specs do not define, or an implementation asking for an argument its
    spec lacks, raises :class:`~stm_core.errors.PluginError` naming the plugin
    and the hook, and leaves the manager as it was.

    :return: the registered name, or ``None`` when that name is blocked.
    """
    name = name or plugin_name(plugin, pm)
    try:
        registered = pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        discard(pm, name)
        reason = "; ".join(parameter_errors(pm, plugin)) or error_text(exc)
        raise PluginError(f"plugin {name!r} is invalid: {reason}") from exc
    except ValueError as exc:
        raise PluginError(f"plugin {name!r} cannot be registered: {error_text(exc)}") from exc
    if registered is None:
        pm.skipped.append(SkippedPlugin(origin=PluginOrigin(name=name, kind=kind),
                                        reason="its name is blocked"))
        return None
    unknown = [hook for owner, hook in unknown_hook_impls(pm) if owner == registered]
    if unknown:
        pm.unregister(name=registered)
        raise PluginError(f"plugin {registered!r} is invalid: {unknown_hooks_text(unknown)}")
    problems = implementation_errors(pm, plugin)
    unmarked = unmarked_hook_functions(pm, plugin)
    if problems or (unmarked and pm.policy.strict):
        pm.unregister(name=registered)
        reasons = [*problems, *([unmarked_text(unmarked)] if unmarked else [])]
        raise PluginError(f"plugin {registered!r} is invalid: {'; '.join(reasons)}")
    if unmarked:
        # Host code hears of it as a warning (an error under -W error or strict mode).
        warnings.warn(f"plugin {registered!r}: {unmarked_text(unmarked)}", PluginWarning,
                      stacklevel=2)
        pm.plugin_warnings[registered] = [unmarked_text(unmarked)]
    version = stm_version() if kind == "builtin" else None
    pm.origins[registered] = PluginOrigin(
        name=registered, kind=kind, version=version,
        distribution=STM_DISTRIBUTION if kind == "builtin" else None)
    return registered


def unknown_hook_impls(pm: pluggy.PluginManager) -> list[tuple[str, str]]:
    """``(plugin name, hook name)`` of every implementation of a hook that no
    spec defines (a typo such as ``stm_tool_availabel``), sorted."""
    found: set[tuple[str, str]] = set()
    for hook_name, caller in vars(pm.hook).items():
        if hook_name.startswith("_") or caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if not impl.optionalhook:
                found.add((impl.plugin_name, hook_name))
    return sorted(found)


def unknown_hooks_text(hooks: Iterable[str]) -> str:
    """``unknown hook 'stm_tool_availabel' (did you mean 'stm_tool_available'?)``."""
    specs = spec_hook_names()
    parts = []
    for hook in hooks:
        close = difflib.get_close_matches(hook, specs, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"unknown hook {hook!r}{hint}")
    return "; ".join(parts)


def spec_hook_names() -> list[str]:
    return sorted(name for spec in SPEC_CLASSES for name in vars(spec)
                  if name.startswith(f"{PROJECT_NAME}_"))


def plugin_name(plugin: object, pm: pluggy.PluginManager | None = None) -> str:
    """A readable, unused name: a module's name, a ``__name__`` or ``name``
    attribute, else the class's dotted name (numbered if already taken)."""
    if isinstance(plugin, ModuleType):
        return plugin.__name__
    for attribute in ("__name__", "name"):
        value = getattr(plugin, attribute, None)
        if isinstance(value, str) and value:
            return value
    base = f"{type(plugin).__module__}.{type(plugin).__qualname__}"
    candidate, n = base, 1
    while pm is not None and pm.has_plugin(candidate):
        n += 1
        candidate = f"{base}#{n}"
    return candidate


@functools.cache
def stm_version() -> str | None:
    """The installed stm's version (``None`` when it runs uninstalled)."""
    found = installed_version(STM_DISTRIBUTION)
    if found is not None:
        return found
    import importlib.metadata

    try:
        return importlib.metadata.version(STM_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _register_builtins(pm: StmPluginManager, policy: LoadPolicy) -> None:
    for module_name in DEFAULT_PLUGINS:
        if policy.blocks(module_name):
            pm.set_blocked(module_name)
            pm.skipped.append(SkippedPlugin(
                origin=PluginOrigin(name=module_name, kind="builtin",
                                    distribution=STM_DISTRIBUTION, version=stm_version()),
                reason=f"disabled by {policy.block_source}"))
            continue
        register_host_plugin(pm, importlib.import_module(module_name), name=module_name,
                             kind="builtin")


def _drop_invalid_entrypoints(pm: StmPluginManager, *, strict: bool) -> None:
    """Entry-point plugins implementing hooks no spec defines are unregistered
    and recorded as failed (or raise, in strict mode)."""
    by_plugin: dict[str, list[str]] = {}
    for owner, hook in unknown_hook_impls(pm):
        by_plugin.setdefault(owner, []).append(hook)
    for owner, hooks in by_plugin.items():
        origin = pm.origins.get(owner)
        if origin is None or origin.kind != "entrypoint":
            raise PluginError(f"plugin {owner!r} is invalid: {unknown_hooks_text(hooks)}")
        discard(pm, owner)
        fail(pm, origin, "validate", unknown_hooks_text(hooks), strict=strict)
