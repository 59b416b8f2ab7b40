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
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

from stm_core.admin.history import revision_note
from stm_core.models import ToolResult, Turn
from stm_core.profile import ServerProfile
from stm_core.storage.records import MemoryKey, MemoryWrite
from stm_core.templates import sanitize
from stm_core.tool import TOOL_NAME
from stm_core.tool.gate import gates_open

if TYPE_CHECKING:
    from stm_core.store import Stm

log = logging.getLogger("stm.tool.apply")

SUCCESS_MESSAGE = ("Short-term memory updated. This is silent: no user notification is "
                   "needed; continue the conversation.")

# Turns with a call being applied right now: parallel tool calls of one reply
# must not both pass the once-per-turn rule.
_in_progress: weakref.WeakSet[Turn] = weakref.WeakSet()


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


async def apply_tool_call(stm: Stm, turn: Turn,
                          arguments: Mapping[str, object] | str) -> ToolResult:
    """Validate and write the call. ``arguments`` may also be the raw JSON
    string a provider sent. Never raises."""
    if turn in _in_progress:
        return refusal("already_updated")
    _in_progress.add(turn)
    try:
        return await _apply(stm, turn, arguments)
    except Exception as exc:
        log.exception("%s failed for channel %s", TOOL_NAME, turn.channel_id)
        return refusal("error", f"Error updating short-term memory: {exc}")
    finally:
        _in_progress.discard(turn)


async def _apply(stm: Stm, turn: Turn, arguments: Mapping[str, object] | str) -> ToolResult:
    profile = await stm.profile_for(turn.server_id)
    if not profile.stm_enabled:
        return refusal("disabled")
    if turn.explicit_long_term_intent:
        return refusal("explicit_long_term_intent")
    if stm.tool_already_used(turn):
        return refusal("already_updated")
    if not gates_open(stm, turn, profile):
        return refusal("unavailable")
    args = _as_mapping(arguments)
    if args is None:
        return refusal("invalid_arguments")

    limit = stm.settings.max_summary_length
    truncated: list[str] = []

    def clean(field: str, value: str) -> str:
        text = sanitize(value.strip())
        if len(text) > limit:
            log.info("%s: %s truncated from %d to %d characters",
                     TOOL_NAME, field, len(text), limit)
            truncated.append(field)
            text = text[:limit]
        return text

    if profile.mode == "summary":
        summary = args.get("summary")
        if not isinstance(summary, str):
            return refusal("invalid_summary")
        if not summary.strip():
            return refusal("empty_summary")
        if not _identifiable(turn):
            return refusal("no_identity")
        written = {"summary": clean("summary", summary)}
        await stm.write_memory(_writes(stm, turn, summary=written["summary"]))
    else:
        if not _identifiable(turn):
            return refusal("no_identity")
        written = {slug: clean(slug, value) for slug in profile.slug_map
                   if isinstance(value := args.get(slug), str) and value.strip()}
        if not written:
            return no_category_fields(profile)
        await stm.write_memory(_writes(stm, turn, categories=written))

    stm.mark_tool_used(turn)
    return ToolResult(ok=True, message=SUCCESS_MESSAGE, written=written,
                      truncated=tuple(truncated))


def _as_mapping(arguments: object) -> Mapping[str, object] | None:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    return arguments if isinstance(arguments, Mapping) else None


def _identifiable(turn: Turn) -> bool:
    return bool(turn.user_id) and bool(turn.channel_id)


def _writes(stm: Stm, turn: Turn, *, summary: str | None = None,
            categories: dict[str, str] | None = None) -> list[MemoryWrite]:
    """The live row first (its cadence counter resets) and, in a guild, the
    triggering user's own copy (which feeds DM and cross-server recall)."""
    assert turn.user_id is not None  # checked by _identifiable
    user_key = MemoryKey.user(turn.user_id, turn.channel_id, turn.persona_id, turn.server_id)
    if turn.server_id is None:
        keys = [user_key]
    else:
        keys = [MemoryKey.server(turn.server_id, turn.channel_id, turn.persona_id), user_key]
    now_ms = stm.clock.now_ms()
    settings = stm.settings
    note = revision_note(settings, "model")
    return [MemoryWrite(key=key, now_ms=now_ms, revision=note,
                        set_summary=summary is not None, summary=summary,
                        set_categories=categories is not None, categories=categories or {},
                        reset_counter=key is keys[0],
                        persona_lineage_id=turn.persona_lineage_id,
                        parent_channel_id=turn.parent_channel_id,
                        crude_ttl_ms=settings.crude_ttl_ms,
                        summary_ttl_ms=settings.summary_ttl_ms)
            for key in keys]
