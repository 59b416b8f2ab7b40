"""Prompt templates without ``str.format`` (DESIGN decision 13).

Placeholders are ``{name}`` with ``name`` matching ``[A-Za-z][A-Za-z0-9_]*``.
They are found with one regular expression and replaced by plain string
values; nothing can reach attributes, indexes, conversions or format widths.
Anything not of that shape (JSON, ``{ spaced }``, ``{1abc}``) is literal text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from stm_core.errors import TemplateError

_NAME = r"[A-Za-z][A-Za-z0-9_]*"
_SINGLE = re.compile(r"\{(" + _NAME + r")\}")
_DOUBLE = re.compile(r"\{\{(" + _NAME + r")\}\}")
#: ``{x.attr}``, ``{0[1]}``, ``{x!r}``, ``{x:>9}``: str.format syntax we refuse.
_FORMAT_FIELD = re.compile(r"\{\s*[A-Za-z0-9_]*\s*[.\[!:][^{}]*\}")

#: Identity macros the sanitiser keeps, filled later by mention conversion.
IDENTITY_MACROS = frozenset({"user", "user_formatted", "user_term", "bot", "char"})

#: Hard ceiling on any expanded text, so no template can blow up memory.
MAX_EXPANDED_LENGTH = 64_000


def expand(text: str, values: Mapping[str, str]) -> str:
    """Replace every ``{name}`` whose name is in ``values``; leave the rest.

    Every occurrence is replaced (decision 3). The result is cut at
    :data:`MAX_EXPANDED_LENGTH` characters.
    """
    if "{" not in text or not values:
        return text
    out = _SINGLE.sub(lambda m: values.get(m.group(1), m.group(0)), text)
    return out[:MAX_EXPANDED_LENGTH]


def sanitize(text: str) -> str:
    """Strip unresolved placeholders to their bare name (``{foo}`` -> ``foo``).

    Two passes, double braces first, as upstream. Identity macros (``user``,
    ``user_formatted``, ``user_term``, ``bot``, ``char``; any case) keep their
    braces so mention conversion can fill them. There is no escaping mechanism.
    """
    if "{" not in text:
        return text

    def keep_identity(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name.lower() in IDENTITY_MACROS else name

    return _SINGLE.sub(keep_identity, _DOUBLE.sub(keep_identity, text))


def check_template(text: str, *, field: str) -> None:
    """Refuse ``str.format``-style fields an admin may have typed.

    Raises :class:`TemplateError` naming the first offending field and what is
    allowed. Plain ``{name}`` placeholders and non-placeholder braces pass.
    """
    match = _FORMAT_FIELD.search(text)
    if match:
        raise TemplateError(
            f"{field}: {match.group(0)!r} is not allowed; placeholders are plain "
            "{name} (letters, digits, underscores) with no attributes, indexes, "
            "conversions or format specs",
            field=field, allowed="{name} placeholders")
