"""Type checks of what a host hands the public API, with one error type.

Everything a host passes (a :class:`~stm_core.models.Turn`, history messages,
replies, admin arguments) is checked here before stm uses it, so a wrong type
is a :class:`~stm_core.errors.ValidationError` naming the argument and what is
accepted, never a ``TypeError`` or ``AttributeError`` from deep inside.

Ids are strings. An ``int`` id (discord.py gives ints) becomes its decimal
string here, once, so every backend stores and compares the same text; a
``bool`` or anything else is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, TypeVar

from stm_core.errors import ValidationError

T = TypeVar("T")

ID_ALLOWED = "a string or an int id"


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _got(value: object) -> str:
    """What was passed, short: ``None``, or the type and a cut repr."""
    if value is None:
        return "None"
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _wrong(field: str, allowed: str, value: object) -> ValidationError:
    return ValidationError(f"{field} must be {allowed}, got {_got(value)}", field=field,
                           allowed=allowed)


def to_id(value: object, field: str) -> str:
    """``value`` as a string id: a ``str`` as is, an ``int`` as its decimal text."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _wrong(field, ID_ALLOWED, value)


def to_optional_id(value: object, field: str) -> str | None:
    return None if value is None else to_id(value, field)


def check_text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise _wrong(field, "text (str)", value)
    return value


def check_optional_text(value: object, field: str) -> str | None:
    return None if value is None else check_text(value, field)


def check_int(value: object, field: str) -> int:
    """A whole number; ``True``/``False`` and ``1.0`` are refused (ranges are the caller's)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(field, "a whole number (int)", value)
    return value


def check_flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise _wrong(field, "True or False", value)
    return value


def validator(check: Callable[[object, str], object]) -> Callable[[Any, Any, Any], None]:
    """An attrs validator running ``check(value, field name)``."""
    def run(_: object, attribute: Any, value: object) -> None:
        check(value, attribute.name)
    return run


def check_iterable(value: object, field: str, what: str) -> Iterable[object]:
    """A list, tuple, set or other iterable; not a single string, bytes or mapping
    (iterating those gives characters or keys, never what was meant)."""
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise _wrong(field, f"a list of {what}", value)
    return value


def id_set(value: object, field: str) -> frozenset[str]:
    """A collection of ids (ints become strings) as a frozenset."""
    items = check_iterable(value, field, "ids")
    return frozenset(to_id(item, f"{field} item") for item in items)


def text_mapping(value: object, field: str, *,
                 key: Callable[[object, str], str] = check_text,
                 what: str = "text to text") -> dict[str, str]:
    """A mapping whose keys pass ``key`` and whose values are text."""
    if not isinstance(value, Mapping):
        raise _wrong(field, f"a mapping of {what}", value)
    # A turn's name map may hold a whole guild: the all-text case is checked
    # with C-level iteration and copied once; anything else goes item by item.
    if all(map(isinstance, value, repeat(str))) and all(
            map(isinstance, value.values(), repeat(str))):
        return dict(value)
    return {key(k, f"{field} key"): check_text(text, f"{field}[{k!r}]")
            for k, text in value.items()}


def name_map(value: object, field: str) -> Mapping[str, str]:
    """An id -> display name mapping (``None`` is empty); int ids become strings."""
    return {} if value is None else text_mapping(value, field, key=to_id, what="id to name")


def instances_of(value: object, cls: type[T], field: str, example: str) -> Sequence[T]:
    """A list or tuple whose items are all ``cls`` (plain dicts are refused:
    stm does not guess what a dict's keys mean)."""
    if not isinstance(value, (list, tuple)):  # a tuple: a union is built on every call
        raise ValidationError(f"{field} must be a list of {cls.__name__}, got "
                              f"{_type_name(value)}", field=field,
                              allowed=f"a list of {cls.__name__}")
    if all(map(isinstance, value, repeat(cls))):  # the usual call, checked in C
        return value
    for index, item in enumerate(value):
        if not isinstance(item, cls):
            raise ValidationError(
                f"{field}[{index}] must be a {cls.__name__}, got {_type_name(item)}; "
                f"build it as {example}", field=field, allowed=f"a list of {cls.__name__}")
    return value


def instance_of(value: object, cls: type[T], field: str) -> T:
    if not isinstance(value, cls):
        raise ValidationError(f"{field} must be a {cls.__name__}, got {_type_name(value)}",
                              field=field, allowed=cls.__name__)
    return value
