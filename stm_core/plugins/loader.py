"""Loading third-party plugins from the ``stm`` entry-point group, tolerantly.

pluggy's own ``load_setuptools_entrypoints`` stops at the first plugin that
fails to import, leaving the manager half-loaded in an order that depends on
the environment. This loader walks the entry points itself, in a fixed order:

1. discover every entry point of the group with its distribution's name and
   version, from metadata alone (nothing is imported);
2. apply the allowlist (``STM_LOAD_PLUGINS``) and the blocklist
   (``STM_DISABLED_PLUGINS``), which accept entry-point and distribution names;
3. import and register each remaining plugin; a failure is logged with the
   entry-point name, distribution, version and error, recorded on the manager
   and skipped, unless strict mode (``STM_STRICT_PLUGINS=1``) turns it into a
   :class:`~stm_core.errors.PluginError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from stm_core.errors import PluginError
from stm_core.plugins.checks import (
    implementation_errors,
    parameter_errors,
    unmarked_hook_functions,
    unmarked_text,
)
from stm_core.plugins.dist_scan import declares_entry_point_group
from stm_core.plugins.records import (
    ENTRY_POINT_GROUP,
    FailureStage,
    LoadPolicy,
    PluginFailure,
    PluginOrigin,
    SkippedPlugin,
    normalize_name,
)

if TYPE_CHECKING:
    import importlib.metadata

    from stm_core.plugins.manager import StmPluginManager

#: The logger keeps the name it had before the loader moved (docs/logging.md).
log = logging.getLogger("stm.plugin_loader")


@attrs.frozen(kw_only=True)
class EntryPointRef:
    """One entry point of the group, known from metadata without importing it."""

    origin: PluginOrigin
    entry_point: importlib.metadata.EntryPoint


def discover_entry_points(group: str = ENTRY_POINT_GROUP) -> list[EntryPointRef]:
    """Every entry point of ``group``, sorted by distribution then name.

    The order is fixed so registration (and so hook call) order does not
    depend on how the environment happens to list its distributions. A
    distribution found twice on ``sys.path`` counts once.
    """
    if declares_entry_point_group(group) is False:
        return []  # the usual case of a short command: importlib.metadata never loads
    import importlib.metadata

    refs: dict[tuple[str, str], EntryPointRef] = {}
    for dist in importlib.metadata.distributions():
        try:
            # Entry points first: most distributions have none of ours, and
            # their METADATA (an email-format parse each) need not be read.
            eps = [ep for ep in dist.entry_points if ep.group == group]
            if not eps:
                continue
            dist_name = dist.metadata["Name"] or "unknown"
        except Exception:  # broken metadata must not stop discovery
            log.warning("skipping a distribution with unreadable metadata at %s",
                        getattr(dist, "_path", "?"), exc_info=True)
            continue
        for ep in eps:
            key = (normalize_name(dist_name), ep.name)
            if key in refs:
                continue
            refs[key] = EntryPointRef(
                origin=PluginOrigin(name=ep.name, kind="entrypoint", distribution=dist_name,
                                    version=dist.version, entry_point=ep.value),
                entry_point=ep)
    return [refs[k] for k in sorted(refs)]


def error_text(exc: BaseException) -> str:
    """One line: ``ImportError: No module named 'x'`` (pluggy's messages span lines)."""
    message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def load_entrypoint_plugins(pm: StmPluginManager, policy: LoadPolicy | None = None,
                            *, group: str = ENTRY_POINT_GROUP,
                            other_names: Iterable[str] = ()) -> None:
    """Register the plugins of ``group`` that ``policy`` lets through.

    Every outcome is recorded on ``pm``: ``pm.origins`` for loaded plugins,
    ``pm.load_failures`` and ``pm.skipped`` for the rest. ``other_names`` are
    names the lists may also use (the built-ins), so they raise no warning.
    """
    policy = policy or LoadPolicy.build()
    refs = discover_entry_points(group)
    _warn_unknown_names(policy, refs, other_names)
    for ref in refs:
        origin = ref.origin
        if policy.blocks(origin.name, origin.distribution):
            pm.set_blocked(origin.name)
            pm.skipped.append(SkippedPlugin(
                origin=origin, reason=f"disabled by {policy.block_source}"))
            log.info("stm plugin %s is disabled", origin.describe())
            continue
        if not policy.allows(origin.name, origin.distribution):
            pm.skipped.append(SkippedPlugin(
                origin=origin, reason=f"not listed in {policy.allow_source}"))
            continue
        owner = pm.origins.get(origin.name)
        if owner is not None or pm.has_plugin(origin.name):
            by = owner.describe() if owner else "another plugin"
            fail(pm, origin, "register", f"the name {origin.name!r} is already used by {by}",
                 strict=policy.strict)
            continue
        _load_one(pm, ref, strict=policy.strict)


def _load_one(pm: StmPluginManager, ref: EntryPointRef, *, strict: bool) -> None:
    origin = ref.origin
    try:
        plugin = ref.entry_point.load()
    except (Exception, SystemExit) as exc:  # a plugin's import must never end the host
        fail(pm, origin, "import", error_text(exc), strict=strict, cause=exc)
        return
    try:
        pm.register(plugin, name=origin.name)
    except Exception as exc:
        discard(pm, origin.name)
        reason = "; ".join(parameter_errors(pm, plugin)) or error_text(exc)
        fail(pm, origin, "register", reason, strict=strict, cause=exc)
        return
    problems = implementation_errors(pm, plugin)
    if problems:
        discard(pm, origin.name)
        fail(pm, origin, "validate", "; ".join(problems), strict=strict)
        return
    unmarked = unmarked_hook_functions(pm, plugin)
    if unmarked and strict:
        discard(pm, origin.name)
        fail(pm, origin, "validate", unmarked_text(unmarked), strict=strict)
        return
    pm.origins[origin.name] = origin
    if unmarked:
        log.warning("stm plugin %s: %s", origin.describe(), unmarked_text(unmarked))
        pm.plugin_warnings[origin.name] = [unmarked_text(unmarked)]


def discard(pm: StmPluginManager, name: str) -> None:
    """Unregister ``name`` if a failed registration left part of it behind
    (pluggy before 1.7 registers hook by hook)."""
    if pm.get_plugin(name) is not None:
        pm.unregister(name=name)


def fail(pm: StmPluginManager, origin: PluginOrigin, stage: FailureStage, error: str, *,
         strict: bool, cause: BaseException | None = None) -> None:
    """Record (tolerant mode) or raise (strict mode) one plugin's failure."""
    verb = {"import": "import", "register": "register", "validate": "pass validation"}[stage]
    message = f"stm plugin {origin.describe()} failed to {verb}: {error}"
    if strict:
        raise PluginError(message) from cause
    log.warning("%s; continuing without it", message)
    if cause is not None:
        log.debug("traceback of the failure of %r", origin.name, exc_info=cause)
    pm.load_failures.append(PluginFailure(origin=origin, stage=stage, error=error))


def _warn_unknown_names(policy: LoadPolicy, refs: list[EntryPointRef],
                        other_names: Iterable[str]) -> None:
    """A typo in an allow or block list should not pass silently."""
    known = {normalize_name(n) for ref in refs
             for n in (ref.origin.name, ref.origin.distribution) if n}
    known.update(normalize_name(n) for n in other_names)
    for source, names in ((policy.allow_source, policy.allow or ()),
                          (policy.block_source, policy.block)):
        for name in sorted(names):
            if normalize_name(name) not in known:
                log.warning("%s names %r, but no installed stm plugin, entry point or "
                            "distribution has that name", source, name)
