"""Turn-ephemeral annotations that must not be stored as crude messages."""

from __future__ import annotations

from collections.abc import Iterable

from hookspecs import hookimpl

PATTERNS = (
    r"\[System: This message \(ID: [^\]]*\]",
    r"\[System: Message metadata: [^\]]*\]",
    r"\[System: Reactions on this message: [^\]]*\]",
)


@hookimpl
def stm_annotation_patterns() -> Iterable[str]:
    return PATTERNS
