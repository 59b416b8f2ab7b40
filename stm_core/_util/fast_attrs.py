"""Building frozen attrs objects on the per-turn path without their ``__init__``.

A frozen attrs class sets each field through ``object.__setattr__`` by name.
For classes that check nothing on the way in (no validators, converters,
setattr hooks, init hooks or cached hash, verified when the maker is made),
setting each slot through its descriptor gives the very same object in about
half the time. A turn builds ten stored lines, two writes and two records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")

_INIT_HOOKS = ("__attrs_pre_init__", "__attrs_post_init__")
_FACTORY: type = type(attrs.Factory(list))


def unchecked_maker(cls: type[T], *, positional: bool = False) -> Callable[..., T]:
    """``make(**fields)``: an instance of ``cls``, the fields given by keyword
    as to the class itself (plain defaults apply; a field with a factory
    default must be given). With ``positional``, the fields may also be given
    by position, in the class's field order (a test should pin that order).
    Raises :class:`TypeError` for a class whose ``__init__`` does more than
    set its fields."""
    check_plain(cls)
    scope: dict[str, Any] = {"_stm_new": object.__new__, "_stm_cls": cls}
    params, body = [], ["    made = _stm_new(_stm_cls)"]
    defaulted = False
    for field in attrs.fields(cast(Any, cls)):
        name = field.alias  # the keyword the class's own __init__ takes
        if field.default is attrs.NOTHING or isinstance(field.default, _FACTORY):
            if positional and defaulted:
                raise TypeError(f"{cls.__name__}.{name} has no default but follows one "
                                "that has: the fields cannot be given by position")
            params.append(name)
        else:
            defaulted = True
            scope[f"_stm_default_{name}"] = field.default
            params.append(f"{name}=_stm_default_{name}")
        scope[f"_stm_set_{name}"] = slot_setter(cls, field.name)
        body.append(f"    _stm_set_{name}(made, {name})")
    star = "" if positional else "*, "
    source = "\n".join([f"def make({star}{', '.join(params)}):", *body, "    return made"])
    exec(source, scope)  # code made from the class's field names only
    make: Callable[..., T] = scope["make"]
    make.__qualname__ = make.__name__ = f"make_{cls.__name__}"
    return make


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The descriptor setter of field ``name`` of the slotted class ``cls``."""
    setter: Callable[[Any, Any], None] = getattr(cls, name).__set__
    return setter


def check_plain(cls: type) -> None:
    """Raise :class:`TypeError` unless ``cls``'s ``__init__`` only sets its fields."""
    slots = cls.__dict__.get("__slots__")
    if not attrs.has(cls) or slots is None:
        raise TypeError(f"{cls.__name__} is not a slotted attrs class")
    if "_attrs_cached_hash" in slots:
        raise TypeError(f"{cls.__name__} caches its hash, which its __init__ sets up")
    for field in attrs.fields(cls):
        if field.validator is not None or field.converter is not None:
            raise TypeError(f"{cls.__name__}.{field.name} is checked or converted on init")
        if field.on_setattr not in (None, attrs.setters.NO_OP):
            raise TypeError(f"{cls.__name__}.{field.name} has a setattr hook")
    if any(hasattr(cls, hook) for hook in _INIT_HOOKS):
        raise TypeError(f"{cls.__name__} runs an init hook")
