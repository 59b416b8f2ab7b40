"""Files the ``stm`` command reads and writes, with one clean error each.

A file that is not UTF-8, not JSON, nested too deeply or cannot be read, and
an output path whose folder is missing, are the operator's input, so they
raise :class:`~stm_core.errors.ValidationError` (exit 2, one line naming the
file) instead of a Python exception name and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stm_core.errors import ValidationError

#: Deeper JSON than this is refused: no stm document nests more than a few
#: levels, and a deep one would only exhaust the parser's stack.
MAX_JSON_DEPTH = 64


def read_text_file(path: Path, *, field: str, allowed: str) -> str:
    """The file's text; a binary, unreadable or missing file is a ValidationError."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not UTF-8 text (byte {exc.start} cannot be read)",
                              field=field, allowed=allowed) from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot be read ({exc.strerror or 'unknown error'})",
                              field=field, allowed=allowed) from None


def read_json_file(path: Path, *, field: str, allowed: str) -> Any:
    """The file's JSON value, at most :data:`MAX_JSON_DEPTH` levels deep."""
    text = read_text_file(path, field=field, allowed=allowed)
    if _depth(text) > MAX_JSON_DEPTH:
        raise ValidationError(f"{path}: JSON nested more than {MAX_JSON_DEPTH} levels deep",
                              field=field, allowed=allowed)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc})", field=field,
                              allowed=allowed) from None


def _depth(text: str) -> int:
    """The deepest bracket nesting, counted outside strings (before parsing, so a
    deep document never reaches the recursive parser)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def write_text_file(path: Path, text: str) -> None:
    """Write ``text``; a missing folder or a refused write is a ValidationError."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or "unknown error"
        if not path.parent.is_dir():
            reason = f"the folder {path.parent} does not exist"
        raise ValidationError(f"cannot write {path}: {reason}", field="output",
                              allowed="a file in an existing, writable folder") from None
