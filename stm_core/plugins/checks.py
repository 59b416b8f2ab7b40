"""Checks of a plugin's hook implementations that pluggy does not make.

pluggy accepts, and then silently mishandles:

* an ``async def`` implementation: nothing awaits it, so a gate's coroutine
  counts as an answer that is not ``False`` and a phrasing hook returns a
  coroutine instead of text. stm's hooks are synchronous (work that needs I/O
  lives in the objects they return), so these are refused;
* a parameter with a default, or a keyword-only one: pluggy never passes
  either. One the hook does not have is refused (it is a typo or a parameter
  from another version); one the hook has is refused too, since the plugin
  would silently always see its default;
* a function named like a hook (``stm_...``) without ``@hookimpl``: it is
  never called. That is reported as a warning, since a plugin may have a
  helper with such a name; strict mode makes it an error.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import pluggy

from hookspecs import PROJECT_NAME

_PASSABLE = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def implementation_errors(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """What is wrong with ``plugin``'s implementations of specified hooks,
    one line each naming the hook (empty when all is well)."""
    errors: list[str] = []
    for caller in pm.get_hookcallers(plugin) or ():
        if caller.spec is None:  # unknown hooks are reported elsewhere, with a hint
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin:
                errors.extend(_errors_of(caller.name, impl.function,
                                         frozenset(caller.spec.argnames)))
    return errors


def parameter_errors(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """What is wrong with ``plugin``'s implementations, found before it is
    registered: pluggy refuses a parameter its hook lacks with a message that
    names neither the close match nor the hook's parameters, so stm says both."""
    errors: list[str] = []
    for name in dir(plugin):
        opts = pm.parse_hookimpl_opts(plugin, name)
        if opts is None:
            continue
        hook = opts.get("specname") or name
        caller = getattr(pm.hook, hook, None)
        if caller is not None and caller.spec is not None:
            errors.extend(_errors_of(hook, getattr(plugin, name),
                                     frozenset(caller.spec.argnames)))
    return errors


def _errors_of(hook: str, function: Any, spec_args: frozenset[str]) -> list[str]:
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        return [f"{hook} is an async def; hooks are called without being awaited, so it "
                f"must be a plain def (do asynchronous work in the objects a hook returns)"]
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: pluggy passes nothing
        return []
    errors = []
    for param in parameters:
        if param.name == "self":
            continue
        known = param.name in spec_args
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            errors.append(f"{hook} takes {param}; name the parameters it needs instead "
                          f"(its parameters: {_names(spec_args)})")
        elif not known:
            close = difflib.get_close_matches(param.name, sorted(spec_args), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            errors.append(f"{hook} asks for {param.name!r}, which the hook does not have "
                          f"({hint}its parameters: {_names(spec_args)})")
        elif param.kind not in _PASSABLE:
            errors.append(f"{hook}: {param.name!r} is keyword-only and would never be "
                          f"passed; make it an ordinary parameter")
        elif param.default is not inspect.Parameter.empty:
            errors.append(f"{hook}: {param.name!r} has a default, and pluggy never passes "
                          f"parameters with defaults; remove the default")
    return errors


def _names(spec_args: Iterable[str]) -> str:
    return ", ".join(sorted(spec_args)) or "none"


def unmarked_hook_functions(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """Names of ``plugin``'s functions named ``stm_...`` that are not marked
    ``@hookimpl`` (so never called), sorted. For a module, only functions
    defined in it count, not ones it imports."""
    prefix = f"{PROJECT_NAME}_"
    found = []
    for name in dir(plugin):
        if not name.startswith(prefix):
            continue
        try:
            value = getattr(plugin, name)
        except Exception:  # a property that raises is not a hook
            continue
        if not inspect.isroutine(value) or not _defined_by(plugin, value):
            continue
        if pm.parse_hookimpl_opts(plugin, name) is None:
            found.append(name)
    return sorted(found)


def unmarked_text(names: Iterable[str]) -> str:
    listed = ", ".join(f"{n!r}" for n in names)
    return (f"{listed} named like a hook but not marked @hookimpl, so never called "
            f"(decorate it with stm_core.hookimpl, or rename it)")


def _defined_by(plugin: object, value: Any) -> bool:
    if isinstance(plugin, ModuleType):
        return getattr(value, "__module__", None) == plugin.__name__
    return True
