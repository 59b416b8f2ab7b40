"""Persona memory as an admin sees and edits it (``/persona stm view|edit``).

The view resolves the exact row that gets injected: the server-shared row
``(server, channel, persona)`` in a guild, the user row ``(user, channel,
persona)`` in a DM. Edits are cleaned like the tool's writes: trimmed,
placeholders sanitised, cut to ``max_summary_length`` (truncation, never
rejection, so the tool and the admin path agree; DESIGN decision 11).
"""

from __future__ import annotations

from collections.abc import Mapping

from stm_core.admin.values import MemorySection, MemorySnapshot, Mode
from stm_core.engine.profile import ServerProfile
from stm_core.errors import ValidationError
from stm_core.pipeline.memory_ttl import is_expired
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryRecord
from stm_core.text.slugs import humanize_slug, slugify
from stm_core.text.templates import sanitize

#: Display text beyond this is cut, with :data:`TRUNCATED_NOTICE` appended.
VIEW_MAX_CHARS = 3800
TRUNCATED_NOTICE = "\n… (truncated)"
EMPTY_NOTICE = "(no short-term memory for this persona in this channel)"


def live_key(*, channel_id: str, persona_id: str | None, server_id: str | None,
             user_id: str | None) -> MemoryKey:
    """The injected row: server-shared in a guild, the user's own in a DM."""
    if not channel_id:
        raise ValidationError("a channel id is required", field="channel_id",
                              allowed="a non-empty channel id")
    if server_id is not None:
        if not server_id:
            raise ValidationError("the server id is empty; pass None for a DM",
                                  field="server_id", allowed="a non-empty id or None")
        return MemoryKey.server(server_id, channel_id, persona_id)
    if not user_id:
        raise ValidationError("a direct-message memory needs the user id", field="user_id",
                              allowed="the DM user's id")
    return MemoryKey.user(user_id, channel_id, persona_id, None)


def sections_of(record: MemoryRecord | None, profile: ServerProfile) -> tuple[MemorySection, ...]:
    """What the same-channel block shows, as labelled parts.

    Category mode: configured slugs in position order with their labels, blank
    ones skipped (slugs no longer configured are not shown). Summary mode: the
    summary, which wins over stale categories (DESIGN decision 2); without one,
    the categories under humanised slugs, as other channels would show them.
    """
    if record is None:
        return ()
    categories = record.categories
    if profile.mode == "category" and categories:
        return tuple(MemorySection(slug=slug, label=label, text=categories[slug].strip())
                     for slug, label in profile.slug_map.items()
                     if categories.get(slug, "").strip())
    if record.summary and record.summary.strip():
        return (MemorySection(slug="summary", label="Summary", text=record.summary.strip()),)
    return tuple(MemorySection(slug=slug, label=humanize_slug(slug), text=text.strip())
                 for slug, text in categories.items() if text.strip())


def display_text(sections: tuple[MemorySection, ...], mode: Mode) -> tuple[str, bool]:
    """The text to show and whether it was truncated."""
    if not sections:
        return EMPTY_NOTICE, False
    if mode == "summary" and len(sections) == 1 and sections[0].slug == "summary":
        text = sections[0].text
    else:
        text = "\n\n".join(f"{s.label}:\n{s.text}" for s in sections)
    if len(text) > VIEW_MAX_CHARS:
        return text[:VIEW_MAX_CHARS] + TRUNCATED_NOTICE, True
    return text, False


def snapshot(key: MemoryKey, record: MemoryRecord | None, profile: ServerProfile, *,
             now_ms: int, settings: Settings) -> MemorySnapshot:
    sections = sections_of(record, profile)
    text, truncated = display_text(sections, profile.mode)
    expired = record is not None and record.has_content and is_expired(
        record, now_ms, crude_ttl_ms=settings.crude_ttl_ms,
        summary_ttl_ms=settings.summary_ttl_ms)
    return MemorySnapshot(
        key=key, scope="server" if key.scope_kind == "server" else "dm",
        mode=profile.mode, exists=record is not None, sections=sections, text=text,
        truncated=truncated, is_empty=not sections, expired=expired,
        turns_since_refresh=record.turns_since_refresh if record else 0,
        updated_at_ms=record.updated_at_ms if record else 0,
        messages=record.messages if record else ())


def clean_value(text: str, *, max_length: int) -> tuple[str, bool]:
    """Trim, sanitise placeholders, cut to ``max_length`` (the tool's order)."""
    cleaned = sanitize(text.strip())
    if len(cleaned) > max_length:
        return cleaned[:max_length], True
    return cleaned, False


def resolve_slug(name: str, slug_map: Mapping[str, str]) -> str:
    """A category named by slug, by label (any case) or by a label's slug."""
    if name in slug_map:
        return name
    folded = name.strip().casefold()
    for slug, label in slug_map.items():
        if label.casefold() == folded:
            return slug
    slug = slugify(name)
    if slug in slug_map:
        return slug
    allowed = ", ".join(f"{label} ({slug})" for slug, label in slug_map.items())
    raise ValidationError(f"unknown category {name!r}; this server's categories: {allowed}",
                          field="categories", allowed=allowed)


def build_categories(values: Mapping[str, str], profile: ServerProfile, *,
                     max_length: int) -> tuple[dict[str, str], tuple[str, ...]]:
    """The new full categories dict, in position order, and the truncated slugs.

    Blank values clear their slug (this is a replacement, not a merge).
    """
    given: dict[str, str] = {}
    for name, text in values.items():
        if not isinstance(text, str):
            raise ValidationError(f"category {name!r}: the value must be text",
                                  field="categories", allowed="text")
        slug = resolve_slug(name, profile.slug_map)
        if slug in given:
            raise ValidationError(f"category {profile.slug_map[slug]!r} is given twice",
                                  field="categories", allowed="each category once")
        given[slug] = text
    result: dict[str, str] = {}
    truncated: list[str] = []
    for slug in profile.slug_map:
        if slug not in given or not given[slug].strip():
            continue
        result[slug], was_cut = clean_value(given[slug], max_length=max_length)
        if was_cut:
            truncated.append(slug)
    return result, tuple(truncated)
