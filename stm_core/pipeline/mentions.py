"""Stage 10, mention conversion: every emitted text passes through the
registered converters, in hook order (reference §2.5)."""

from __future__ import annotations

from collections.abc import Sequence

from hookspecs.types import MentionConverter
from stm_core.models import Turn


def convert_mentions(text: str, turn: Turn, converters: Sequence[MentionConverter]) -> str:
    for convert in converters:
        text = convert(text, turn)
    return text
