"""Every admin call checks its arguments' types against its own signature.

:func:`checked_arguments` wraps each public method of a class so that, before
the method runs, each argument is checked against the method's annotation: a
``bool`` must be ``True``/``False``, text must be ``str``, a list of ids must
be a list (not one string, not ``None``), a mapping must map text to text.
A wrong type raises :class:`~stm_core.errors.ValidationError` naming the
argument; nothing is read or written. Id arguments (``*_id``, ``channel_ids``)
given as ``int`` become strings, as in a :class:`~stm_core.models.Turn`.

Deriving the checks from the annotations means a new admin method is checked
without anyone remembering to; values (ranges, lengths, formats) are still
checked by the method itself.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from stm_core._util.arguments import (
    check_flag,
    check_int,
    check_iterable,
    check_text,
    id_set,
    text_mapping,
    to_id,
)
from stm_core.errors import ValidationError

C = TypeVar("C", bound=type)
Check = Callable[[object, str], object]


def _is_id(name: str) -> bool:
    return name.endswith("_id") or name.endswith("_ids")


def _texts(value: object, field: str) -> list[str]:
    return [check_text(item, f"{field} item") for item in check_iterable(value, field, "texts")]


def _text_or_texts(value: object, field: str) -> str | list[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise ValidationError(f"{field} must be text or a list of texts, got "
                              f"{type(value).__name__}", field=field,
                              allowed="text or a list of texts")
    return _texts(value, field)


def _id_list(value: object, field: str) -> list[str]:
    return sorted(id_set(value, field))


def _optional(check: Check) -> Check:
    return lambda value, field: None if value is None else check(value, field)


#: The kinds of argument checked, each with its check.
CHECKS: dict[str, Check] = {
    "flag": check_flag,
    "int": check_int,
    "id": to_id,
    "text": check_text,
    "ids": _id_list,
    "texts": _texts,
    "text_or_texts": _text_or_texts,
    "text_mapping": text_mapping,
}


def kind_of(name: str, hint: object) -> tuple[str | None, bool]:
    """The kind (a :data:`CHECKS` key) of a parameter and whether ``None`` is
    allowed. Kind ``None``: the method checks the value itself (an ``Actor``,
    a free-form document); the ranges of ``int`` parameters are checked there too."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = tuple(a for a in args if a is not type(None))
        if len(rest) == 1:
            return kind_of(name, rest[0])[0], len(rest) < len(args)
        kind = "text_or_texts" if set(rest) == {str, Iterable[str]} else None
        return kind, len(rest) < len(args)
    if hint is bool:
        return "flag", False
    if hint is int:
        return "int", False
    if hint is str:
        return ("id" if _is_id(name) else "text"), False
    if origin is Iterable and args == (str,):
        return ("ids" if _is_id(name) else "texts"), False
    if origin is Mapping and args == (str, str):
        return "text_mapping", False
    return None, False


def checker_for(name: str, hint: object) -> Check | None:
    """The check of one parameter (``None``: the method checks it itself)."""
    kind, optional = kind_of(name, hint)
    if kind is None:
        return None
    return _optional(CHECKS[kind]) if optional else CHECKS[kind]


def _checks_of(method: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Check]]:
    signature = inspect.signature(method)
    hints = typing.get_type_hints(method)
    return signature, {name: check for name in signature.parameters
                       if name in hints and (check := checker_for(name, hints[name])) is not None}


async def _call_checked(method: Callable[..., Coroutine[Any, Any, Any]],
                        checks_of: Callable[[], tuple[inspect.Signature, dict[str, Check]]],
                        args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    signature, checks = checks_of()
    bound = signature.bind(*args, **kwargs)  # a call of the wrong shape: TypeError
    for name, check in checks.items():
        if name in bound.arguments:
            bound.arguments[name] = check(bound.arguments[name], name)
    return await method(*bound.args, **bound.kwargs)


def _wrap(method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    # The checks are worked out on the first call, not at import: a command makes
    # one or two admin calls, and reading every method's hints up front slows its
    # start. Only this wrapper is made at import; the checking runs per call.
    checks_of = functools.cache(lambda: _checks_of(method))

    @functools.wraps(method)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        return await _call_checked(method, checks_of, args, kwargs)

    return checked


def checked_arguments(cls: C) -> C:
    """Wrap every public coroutine method of ``cls`` in its argument checks."""
    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.iscoroutinefunction(member):
            setattr(cls, name, _wrap(member))
    return cls
