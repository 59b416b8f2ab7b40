"""Category slugs: the tool's property names (reference §4.4)."""

from __future__ import annotations

import re

MAX_SLUG_LENGTH = 48
_NON_WORD = re.compile(r"[\s\W]+", re.ASCII)
_NOT_SLUG = re.compile(r"[^a-z0-9_]")
_UNDERSCORES = re.compile(r"_+")


def slugify(label: str) -> str:
    """Lower-case, runs of non-word characters to ``_`` (ASCII), trimmed,
    ``c_`` before a leading digit, cut to 48 characters. May return ``""``."""
    slug = _NON_WORD.sub("_", label.lower())
    slug = _NOT_SLUG.sub("", slug)
    slug = _UNDERSCORES.sub("_", slug).strip("_")
    if slug[:1].isdigit():
        slug = "c_" + slug
    return slug[:MAX_SLUG_LENGTH]


def build_slug_map(labels: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Slug -> label, in order. Empty slugs become ``field``; collisions get
    ``_2``, ``_3``, ... (only reachable for data that bypassed validation)."""
    result: dict[str, str] = {}
    for label in labels:
        base = slugify(label) or "field"
        slug, n = base, 2
        while slug in result:
            slug, n = f"{base}_{n}", n + 1
        result[slug] = label
    return result


def humanize_slug(slug: str) -> str:
    """``party_status`` -> ``Party Status`` (how other channels show categories)."""
    return " ".join(w[:1].upper() + w[1:] for w in slug.split("_") if w)
