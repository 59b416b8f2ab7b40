"""The ``update_short_term_memory`` declaration offered to the model (reference §3.3).

Summary mode has one ``summary`` property; category mode has one string
property per category slug, in position order, described by the category's
description (expanded and sanitised). The tool description is the server's
override when set, in both modes (DESIGN decision 10), else the provider's
phrasing. The neutral :class:`ToolSchema` is then rendered in a provider
format registered by a plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookspecs.types import ToolFormat, ToolSchema
from stm_core.engine.profile import PromptSet, ServerProfile
from stm_core.errors import ValidationError
from stm_core.models import Turn
from stm_core.tool import TOOL_NAME
from stm_core.tool.gate import tool_available

if TYPE_CHECKING:
    from stm_core.engine.core import Engine
    from stm_core.plugins.hooks import Hooks

_MEMO_LIMIT = 1024
# (id(profile), id(prompts)) -> (profile, prompts, schema). The objects are held
# so their ids cannot be reused while the entry lives; both are immutable and
# replaced (not edited) when settings, plugins or prompts change.
_memo: dict[tuple[int, int], tuple[ServerProfile, PromptSet, ToolSchema]] = {}


def build_tool_schema(profile: ServerProfile, prompts: PromptSet) -> ToolSchema:
    """The neutral tool schema for a server profile and a provider's prompts."""
    if profile.mode == "summary":
        properties: tuple[tuple[str, str], ...] = (
            ("summary", prompts.field_descriptions["summary"]),)
    else:
        properties = tuple((slug, prompts.field_descriptions.get(slug, label))
                           for slug, label in profile.slug_map.items())
    return ToolSchema(name=TOOL_NAME, description=prompts.tool_description,
                      properties=properties, mode=profile.mode)


def cached_tool_schema(profile: ServerProfile, prompts: PromptSet) -> ToolSchema:
    """:func:`build_tool_schema`, memoized per (profile, prompts) object pair."""
    key = (id(profile), id(prompts))
    hit = _memo.get(key)
    if hit is not None and hit[0] is profile and hit[1] is prompts:
        return hit[2]
    schema = build_tool_schema(profile, prompts)
    if len(_memo) >= _MEMO_LIMIT:
        _memo.clear()
    _memo[key] = (profile, prompts, schema)
    return schema


def registered_format(hooks: Hooks, format: str) -> ToolFormat:
    """The format registered under ``format``, or a :class:`ValidationError`."""
    formats = hooks.tool_formats()
    found = formats.get(format) if isinstance(format, str) else None
    if found is None:
        raise ValidationError(
            f"unknown tool format {format!r}; registered formats: "
            + ", ".join(sorted(formats)),
            field="format", allowed=", ".join(sorted(formats)))
    return found


async def tool_schema(engine: Engine, turn: Turn, format: str | None) -> dict[str, Any] | None:
    """The declaration to offer this turn, or ``None`` when the tool is not
    available (gates closed, or already used this turn).

    Raises :class:`ValidationError` for an unknown ``format`` key (even on turns
    where the tool is withheld: a typo is a host bug). A provider no format rule
    knows gets the fallback format with a warning, or, under
    ``Settings.strict_providers``, :class:`~stm_core.errors.UnknownProvider`
    when the tool would be offered (a provider without tools, such as NovelAI,
    needs no format).
    """
    explicit = None if format is None else registered_format(engine.hooks, format)
    if not await tool_available(engine, turn):
        return None
    fmt = explicit or engine.hooks.tool_format_for(turn.provider, turn.model,
                                                strict=engine.settings.strict_providers)
    profile = await engine.profile_for(turn.server_id)
    prompts = engine.profiles.prompts(turn.server_id or "", profile, turn.provider, turn.model)
    return fmt.render(cached_tool_schema(profile, prompts))
