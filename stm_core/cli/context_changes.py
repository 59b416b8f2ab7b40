"""``stm context --previous FILE``: which parts of the prompt changed since the
previous turn (a saved ``stm --json context`` output), where the new prompt
first departs from the previous one, and how much of the prompt a provider's
prompt cache could still serve.

The earlier prompt is also handed to ``inject`` (as a cache-aware host does),
so under the ``stable`` policy an unchanged block is shown where it stayed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stm_core.errors import ValidationError
from stm_core.inject.prompt_reuse import prompt_text, shared_prefix

EXPECTED = "the JSON output of an earlier `stm --json context`"


def _dicts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def load_previous(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read it as JSON ({exc})", field="previous",
                              allowed=EXPECTED) from None
    if not isinstance(data, dict) or not _dicts(data.get("memory_items")) \
            or not _dicts(data.get("messages")):
        raise ValidationError(f"{path}: not an `stm --json context` output",
                              field="previous", allowed=EXPECTED)
    return data


def previous_messages(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The earlier output's prompt, for ``inject(previous=...)``."""
    return [m for m in data.get("messages", []) if isinstance(m, dict)]


def _block_index(data: Mapping[str, Any]) -> int | None:
    """Where the memory block starts in the prompt (``None``: no block)."""
    texts = [str(i.get("text")) for i in data.get("memory_items", []) if isinstance(i, dict)]
    for index, message in enumerate(data.get("messages", [])):
        if texts and isinstance(message, dict) and message.get("content") == texts[0] \
                and message.get("tag") is not None:
            return index
    return None


def _label(data: Mapping[str, Any], index: int) -> str:
    """What the message at ``index`` of the prompt is, for a person."""
    messages = data.get("messages", [])
    message = messages[index] if isinstance(messages[index], dict) else {}
    content = message.get("content")
    if message.get("tag") is not None:
        for item in data.get("memory_items", []):
            if isinstance(item, dict) and item.get("text") == content:
                return f"memory block ({item.get('kind')})"
        return "nudge"
    if message.get("role") == "system":
        return "system prompt"
    turn = sum(1 for m in messages[:index + 1]
               if isinstance(m, dict) and m.get("tag") is None and m.get("role") != "system")
    return f"dialogue message {turn}"


def first_change(previous: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """The part of the previous prompt that the new one no longer repeats
    first (everything before it is reused); ``None`` when the previous prompt
    is the new one's start (only new messages follow it)."""
    old, new = previous.get("messages", []), current.get("messages", [])
    for index, (before, after) in enumerate(zip(old, new, strict=False)):
        if before != after:
            return _label(previous, index)
    if len(new) < len(old):
        return "messages dropped at the end"
    return None


def _texts(data: Mapping[str, Any]) -> dict[str, str]:
    parts = {f"memory block ({i.get('kind')})": str(i.get("text"))
             for i in data.get("memory_items", []) if isinstance(i, dict)}
    nudge = data.get("nudge")
    if isinstance(nudge, dict):
        parts["nudge"] = str(nudge.get("text"))
    for depth in ("memory_injection_depth", "nudge_injection_depth"):
        parts[depth.replace("_", " ")] = str(data.get(depth))
    if data.get("memory_items"):
        parts["memory block position"] = str(_block_index(data))
    return parts


def _status(before: str | None, after: str | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "gone"
    return "unchanged" if before == after else "changed"


def prompt_changes(previous: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Each part's status (``unchanged``, ``changed``, ``new``, ``gone``), the
    part where the new prompt first departs from the previous one, and the
    share of the new prompt that repeats the previous prompt's start."""
    before, after = _texts(previous), _texts(current)
    names = list(before) + [n for n in after if n not in before]
    old_prompt = prompt_text(previous.get("messages", []))
    new_prompt = prompt_text(current.get("messages", []))
    reused = shared_prefix(old_prompt, new_prompt)
    return {
        "parts": [{"part": n, "status": _status(before.get(n), after.get(n))} for n in names],
        "first_change": first_change(previous, current),
        "prefix_reuse": round(reused / len(new_prompt), 4) if new_prompt else 0.0,
    }
