"""Ids typed by an admin: non-empty strings of reasonable length.

Ids are opaque (Discord snowflakes or anything else); only their shape is
checked, so a typo such as an empty string or a pasted paragraph is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from stm_core._util.arguments import check_iterable, to_id
from stm_core.errors import ValidationError

MAX_ID_LENGTH = 128
_ALLOWED = f"a non-empty id of at most {MAX_ID_LENGTH} characters without spaces"


def check_id(value: object, field: str) -> str:
    """The id as a string (an ``int`` becomes its decimal text), or ValidationError."""
    value = to_id(value, field)
    if (not value or len(value) > MAX_ID_LENGTH
            or any(ch.isspace() or not ch.isprintable() for ch in value)):
        raise ValidationError(f"{field}: {value!r} is not a valid id; expected {_ALLOWED}",
                              field=field, allowed=_ALLOWED)
    return value


def check_optional_id(value: object, field: str) -> str | None:
    return None if value is None else check_id(value, field)


def check_ids(values: Iterable[str], field: str) -> frozenset[str]:
    return frozenset(check_id(v, field) for v in check_iterable(values, field, "ids"))
