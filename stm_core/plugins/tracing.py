"""Hook-call tracing for plugin authors (``STM_TRACE_PLUGINS=1``).

Every hook call is logged to the ``stm.trace`` logger at DEBUG level: the hook,
its arguments, the implementations in the order pluggy calls them, and the
result (or the exception). stm memoizes hook answers per plugin set (see
:mod:`stm_core.plugins.hooks`), so a hook shows up once per plugin set and argument
tuple, not once per turn.
"""

from __future__ import annotations

import logging
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pluggy

log = logging.getLogger("stm.trace")

_repr = reprlib.Repr()
_repr.maxstring = 120
_repr.maxother = 120
_repr.maxlist = 8
_repr.maxdict = 8


def short_repr(value: object) -> str:
    """A repr cut to a readable length (turns and records can be long)."""
    return _repr.repr(value)


def format_call(hook_name: str, kwargs: Mapping[str, Any]) -> str:
    args = ", ".join(f"{k}={short_repr(v)}" for k, v in kwargs.items())
    return f"{hook_name}({args})"


def call_order(impls: Sequence[pluggy.HookImpl]) -> list[str]:
    """Plugin names in the order pluggy calls them (it walks the list backwards)."""
    return [impl.plugin_name for impl in reversed(impls)]


def install_tracing(pm: pluggy.PluginManager,
                    logger: logging.Logger = log) -> Callable[[], None]:
    """Log every hook call of ``pm``; returns a function that stops it.

    The logger's level is set to DEBUG when nobody chose one, so the records
    reach whatever handlers the host configured.
    """
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.DEBUG)

    def before(hook_name: str, impls: Sequence[pluggy.HookImpl],
               kwargs: Mapping[str, Any]) -> None:
        logger.debug("call %s; implementations: %s", format_call(hook_name, kwargs),
                     ", ".join(call_order(impls)) or "none")

    def after(outcome: pluggy.Result[Any], hook_name: str,
              impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]) -> None:
        if outcome.exception is not None:
            logger.debug("%s raised %s", hook_name, short_repr(outcome.exception))
        else:
            logger.debug("%s returned %s", hook_name, short_repr(outcome.get_result()))

    return pm.add_hookcall_monitoring(before, after)
