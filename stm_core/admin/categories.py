"""Category definitions typed by an admin: ``label: description``, one per line.

The whole submission is refused on the first bad line (nothing is saved), as
upstream's ``/server stm categories-edit`` does (reference §11).
"""

from __future__ import annotations

from collections.abc import Iterable

from stm_core.admin.values import CategoryInfo
from stm_core.engine.profile import DEFAULT_CATEGORY
from stm_core.errors import ValidationError
from stm_core.settings import MAX_CATEGORY_LINE_LENGTH
from stm_core.storage.records import CategoryRecord
from stm_core.text.slugs import build_slug_map, slugify

LINE_FORMAT = "label: description"


def split_lines(lines: str | Iterable[str]) -> list[str]:
    """One text block is split at newlines; an iterable gives one category per
    item (like upstream's form slots, an item may span several lines)."""
    if isinstance(lines, str):
        return lines.splitlines()
    return list(lines)


def parse_category_lines(lines: str | Iterable[str], *,
                         max_categories: int) -> tuple[CategoryRecord, ...]:
    """Parse and validate; positions renumbered ``0..n-1``, blank lines skipped.

    Returns ``()`` when every line is blank: the implicit default ``summary``
    category then applies. Raises :class:`ValidationError` for a line without a
    colon, an empty label, description or slug, a duplicate slug, a line longer
    than 1000 characters, or too many categories. Braces in a description are
    kept as typed (rendering makes them safe).
    """
    pairs: list[tuple[str, str, str]] = []
    for number, raw in enumerate(split_lines(lines), start=1):
        if not raw.strip():
            continue
        where = f"categories line {number}"
        if len(raw) > MAX_CATEGORY_LINE_LENGTH:
            raise ValidationError(
                f"{where}: {len(raw)} characters; at most {MAX_CATEGORY_LINE_LENGTH} per line",
                field="categories",
                allowed=f"lines of at most {MAX_CATEGORY_LINE_LENGTH} characters")
        if ":" not in raw:
            raise ValidationError(
                f"{where}: invalid format {raw.strip()!r}; write '{LINE_FORMAT}'",
                field="categories", allowed=LINE_FORMAT)
        label, description = raw.split(":", 1)
        pairs.append((where, label, description))
    return check_categories(pairs, max_categories=max_categories)


def check_categories(entries: Iterable[tuple[str, str, str]], *,
                     max_categories: int) -> tuple[CategoryRecord, ...]:
    """Validate ``(where, label, description)`` entries (trimmed here) into
    records numbered from 0. Shared by the line parser and the config import."""
    records: list[CategoryRecord] = []
    seen: dict[str, str] = {}
    for where, raw_label, raw_description in entries:
        label, description = raw_label.strip(), raw_description.strip()
        if not label or not description:
            missing = "label" if not label else "description"
            raise ValidationError(
                f"{where}: invalid category, the {missing} is empty; write '{LINE_FORMAT}'",
                field="categories", allowed=LINE_FORMAT)
        if ":" in label:
            raise ValidationError(f"{where}: invalid category, the label {label!r} "
                                  "contains ':'", field="categories",
                                  allowed="labels without ':'")
        if len(label) + len(description) + 2 > MAX_CATEGORY_LINE_LENGTH:
            raise ValidationError(
                f"{where}: longer than {MAX_CATEGORY_LINE_LENGTH} characters",
                field="categories",
                allowed=f"at most {MAX_CATEGORY_LINE_LENGTH} characters per category")
        slug = slugify(label)
        if not slug:
            raise ValidationError(
                f"{where}: invalid category, the label {label!r} has no ASCII letter "
                "or digit to name its field",
                field="categories", allowed="labels with at least one ASCII letter or digit")
        if slug in seen:
            raise ValidationError(
                f"{where}: duplicate category {label!r} (same field name {slug!r} as "
                f"{seen[slug]!r})", field="categories", allowed="labels with distinct field names")
        seen[slug] = label
        records.append(CategoryRecord(position=len(records), label=label,
                                      description=description))
        if len(records) > max_categories:
            raise ValidationError(f"too many categories: at most {max_categories}",
                                  field="categories",
                                  allowed=f"at most {max_categories} categories")
    return tuple(records)


def category_infos(records: tuple[CategoryRecord, ...]) -> tuple[CategoryInfo, ...]:
    """The effective list (default when empty), each with its tool field name."""
    effective = records or (DEFAULT_CATEGORY,)
    slugs = list(build_slug_map([c.label for c in effective]))
    return tuple(CategoryInfo(position=c.position, label=c.label,
                              description=c.description, slug=slug)
                 for c, slug in zip(effective, slugs, strict=True))


def format_category_lines(records: Iterable[CategoryRecord]) -> list[str]:
    """The inverse of :func:`parse_category_lines` (export, prefill)."""
    return [f"{c.label}: {c.description}" for c in records]
