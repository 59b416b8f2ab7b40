"""``stm context --previous FILE``: which parts of the prompt changed since the
previous turn (a saved ``stm --json context`` output), and how much of the
prompt a provider's prompt cache could still serve."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stm_core.errors import ValidationError
from stm_core.prompt_reuse import prompt_text, shared_prefix

EXPECTED = "the JSON output of an earlier `stm --json context`"


def load_previous(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read it as JSON ({exc})", field="previous",
                              allowed=EXPECTED) from None
    if not isinstance(data, dict) or not isinstance(data.get("memory_items"), list) \
            or not isinstance(data.get("messages"), list):
        raise ValidationError(f"{path}: not an `stm --json context` output",
                              field="previous", allowed=EXPECTED)
    return data


def _texts(data: Mapping[str, Any]) -> dict[str, str]:
    parts = {f"memory block ({i.get('kind')})": str(i.get("text"))
             for i in data.get("memory_items", []) if isinstance(i, dict)}
    nudge = data.get("nudge")
    if isinstance(nudge, dict):
        parts["nudge"] = str(nudge.get("text"))
    for depth in ("memory_injection_depth", "nudge_injection_depth"):
        parts[depth.replace("_", " ")] = str(data.get(depth))
    return parts


def _status(before: str | None, after: str | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "gone"
    return "unchanged" if before == after else "changed"


def prompt_changes(previous: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """Each part's status (``unchanged``, ``changed``, ``new``, ``gone``) and
    the share of the new prompt that repeats the previous prompt's start."""
    before, after = _texts(previous), _texts(current)
    names = list(before) + [n for n in after if n not in before]
    old_prompt = prompt_text(previous.get("messages", []))
    new_prompt = prompt_text(current.get("messages", []))
    reused = shared_prefix(old_prompt, new_prompt)
    return {
        "parts": [{"part": n, "status": _status(before.get(n), after.get(n))} for n in names],
        "prefix_reuse": round(reused / len(new_prompt), 4) if new_prompt else 0.0,
    }
