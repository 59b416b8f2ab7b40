"""Apply the model's ``update_short_term_memory`` call (reference §3.4).

Every outcome is a :class:`ToolResult` for the host to hand back to the model;
nothing raises. The guards are re-checked here although the tool was only
offered when they passed (defence in depth: hosts dispatch tools by name), in
the reference's order: capability, explicit long-term intent, already updated
this turn, then the provider gates. The mode is read from the server's state
now, not from the schema the model saw.

Writes go to the live scope (the server row in a guild, the user row in a DM)
with the cadence counter reset, and in a guild also to the triggering user's
own copy, in one transaction.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stm_core.engine.profile import ServerProfile
from stm_core.models import ToolResult, Turn
from stm_core.text.templates import sanitize
from stm_core.tool import TOOL_NAME
from stm_core.tool.gate import gates_open
from stm_core.tool.writes import category_writes, summary_writes

if TYPE_CHECKING:
    from stm_core.engine.core import Engine

log = logging.getLogger("stm.tool.apply")

SUCCESS_MESSAGE = ("Short-term memory updated. This is silent: no user notification is "
                   "needed; continue the conversation.")

# Turns with a call being applied right now: parallel tool calls of one reply
# must not both pass the once-per-turn rule. A plain set (turns hash by
# identity): the call that adds a turn removes it when it ends, however it ends.
_in_progress: set[Turn] = set()


#: Failure code -> the message the model reads.
REFUSALS: dict[str, str] = {
    "disabled": "Short-term memory updates are turned off on this server; do not call "
                f"{TOOL_NAME}.",
    "explicit_long_term_intent": "The user asked to remember something for the long term; "
                                 f"use the long-term memory tools instead of {TOOL_NAME}.",
    "already_updated": "Short-term memory was already updated this turn; it can be updated "
                       "once per turn.",
    "unavailable": f"{TOOL_NAME} is not available for this turn.",
    "invalid_arguments": f"{TOOL_NAME} arguments must be a JSON object.",
    "invalid_summary": "summary must be a string.",
    "empty_summary": "summary cannot be empty.",
    "no_identity": "Cannot identify the user or channel to update short-term memory for.",
}


def refusal(code: str, message: str | None = None) -> ToolResult:
    """A failed call (a new object each time: results are the host's to keep)."""
    return ToolResult(ok=False, code=code, message=message or REFUSALS[code])


def no_category_fields(profile: ServerProfile) -> ToolResult:
    return refusal("no_category_fields",
                   "At least one category field must be provided: "
                   + ", ".join(profile.slug_map) + ".")


async def apply_tool_call(engine: Engine, turn: Turn,
                          arguments: Mapping[str, object] | str) -> ToolResult:
    """Validate and write the call. ``arguments`` may also be the raw JSON
    string a provider sent. Never raises."""
    if turn in _in_progress:
        return refusal("already_updated")
    _in_progress.add(turn)
    try:
        return await _apply(engine, turn, arguments)
    except Exception as exc:
        log.exception("%s failed for channel %s", TOOL_NAME, turn.channel_id)
        return refusal("error", f"Error updating short-term memory: {exc}")
    finally:
        _in_progress.discard(turn)


async def _apply(engine: Engine, turn: Turn, arguments: Mapping[str, object] | str) -> ToolResult:
    profile = await engine.profile_for(turn.server_id)
    if not profile.stm_enabled:
        return refusal("disabled")
    if turn.explicit_long_term_intent:
        return refusal("explicit_long_term_intent")
    if engine.tool_already_used(turn):
        return refusal("already_updated")
    if not gates_open(engine, turn, profile):
        return refusal("unavailable")
    args = _as_mapping(arguments)
    if args is None:
        return refusal("invalid_arguments")

    limit = engine.settings.max_summary_length
    truncated: list[str] = []
    if profile.mode == "summary":
        summary = args.get("summary")
        if not isinstance(summary, str):
            return refusal("invalid_summary")
        summary = summary.strip()
        if not summary:
            return refusal("empty_summary")
        if not _identifiable(turn):
            return refusal("no_identity")
        written = {"summary": _clean("summary", summary, limit, truncated)}
        await engine.write_memory(summary_writes(turn, engine.settings, engine.clock.now_ms(),
                                              written["summary"]))
    else:
        if not _identifiable(turn):
            return refusal("no_identity")
        written = {slug: _clean(slug, value.strip(), limit, truncated)
                   for slug in profile.slug_map
                   if isinstance(value := args.get(slug), str) and value.strip()}
        if not written:
            return no_category_fields(profile)
        await engine.write_memory(category_writes(turn, engine.settings, engine.clock.now_ms(),
                                               written))

    engine.mark_tool_used(turn)
    return ToolResult(ok=True, message=SUCCESS_MESSAGE, written=written,
                      truncated=tuple(truncated))


def _clean(field: str, text: str, limit: int, truncated: list[str]) -> str:
    """``text`` (already stripped) as stored: placeholders sanitised, cut to
    ``limit`` characters (and ``field`` noted in ``truncated`` when cut)."""
    text = sanitize(text)
    if len(text) > limit:
        log.info("%s: %s truncated from %d to %d characters",
                 TOOL_NAME, field, len(text), limit)
        truncated.append(field)
        text = text[:limit]
    return text


def _as_mapping(arguments: object) -> Mapping[str, object] | None:
    if type(arguments) is dict:  # what hosts pass: no ABC check needed
        return arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    return arguments if isinstance(arguments, Mapping) else None


def _identifiable(turn: Turn) -> bool:
    return bool(turn.user_id) and bool(turn.channel_id)
