"""Name maps and id sets checked once, for a host to reuse turn after turn.

A ``Turn`` checks and copies the ``user_names``, ``channel_names`` and
``role_names`` it is given, and converts every id of ``thread_ids``: for a
guild with thousands of channels and threads that is work in proportion to
the guild on every turn (``turn_names_us`` in the bench). A host that
builds a :class:`NameMap` or :class:`IdSet` once per guild, and again only
when the guild's channels change, hands the same checked object to every
``Turn``: nothing is checked or copied again, and the shared names are found
once per map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from stm_core._util import arguments
from stm_core.text.memo import TextMemo


class NameMap(dict[str, str]):
    """An id -> display name map, checked once (``int`` ids become their
    decimal strings; anything but text raises ``ValidationError``) and
    read-only: a ``Turn`` given one keeps it as is.

    ``NameMap({1001: "general", "1002": "art"})``.
    """

    __slots__ = ("_shared",)

    def __init__(self, names: Mapping[Any, Any] | None = None, /) -> None:
        super().__init__(arguments.name_map(names, "names"))
        self._shared: frozenset[str] | None = None

    def shared_names(self) -> frozenset[str]:
        """The names more than one id has (found on first use, then kept)."""
        shared = self._shared
        if shared is None:
            shared = self._shared = _repeated(self.values())
        return shared

    def _read_only(self, *_args: object, **_kwargs: object) -> NoReturn:
        raise TypeError("a NameMap cannot be changed; build a new one")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __reduce__(self) -> tuple[type[NameMap], tuple[dict[str, str]]]:
        return NameMap, (dict(self),)

    def __repr__(self) -> str:
        return f"NameMap({dict.__repr__(self)})"


class IdSet(frozenset[str]):
    """A set of ids (``int`` ids become their decimal strings), checked once:
    a ``Turn`` given one as ``thread_ids`` keeps it as is."""

    __slots__ = ()

    def __new__(cls, ids: Iterable[Any] = (), /) -> IdSet:
        return super().__new__(cls, arguments.id_set(ids, "ids"))

    def __repr__(self) -> str:
        return f"IdSet({set(self)!r})" if self else "IdSet()"


def shared_names(names: Mapping[str, str]) -> frozenset[str]:
    """The names more than one id has in ``names``."""
    if type(names) is NameMap:
        return names.shared_names()
    # A host that builds a new plain map on every turn gives the same names
    # turn after turn: a tuple of them finds the answer of the last such map
    # (one C pass and a hash, strings hash once) instead of a set built again.
    values = tuple(names.values())
    shared = _PLAIN_SHARED.get(values)
    if shared is None:
        shared = _repeated(values)
        if _PLAIN_SHARED.full():
            _PLAIN_SHARED.clear()
        _PLAIN_SHARED.remember(values, shared, len(values))
    return shared


#: Plain maps' names (in order) -> the names several ids share; bounded by
#: maps and by the names they hold (``chars`` counts names here).
_PLAIN_SHARED: TextMemo[tuple[str, ...], frozenset[str]] = TextMemo(max_entries=64)


def _repeated(values: Iterable[str]) -> frozenset[str]:
    names = list(values)
    if len(set(names)) == len(names):  # the usual map: every name distinct, one C pass
        return frozenset()
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return frozenset(repeated)
