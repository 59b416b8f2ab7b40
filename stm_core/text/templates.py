"""Prompt templates without ``str.format`` (DESIGN decision 13).

Placeholders are ``{name}`` with ``name`` matching ``[A-Za-z][A-Za-z0-9_]*``.
They are found with one regular expression and replaced by plain string
values; nothing can reach attributes, indexes, conversions or format widths.
Anything not of that shape (JSON, ``{ spaced }``, ``{1abc}``, ``{12:30}``,
``{0.__class__}``, ``{x!r}``, ``{x:>9}``, lone ``{`` or ``}``) is literal
text. So every text an admin, an import or the model writes is stored as
typed (reference §11) and only made safe when rendered (§4.3): no write path
refuses a brace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAME = r"[A-Za-z][A-Za-z0-9_]*"
_SINGLE = re.compile(r"\{(" + _NAME + r")\}")
_DOUBLE = re.compile(r"\{\{(" + _NAME + r")\}\}")

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
