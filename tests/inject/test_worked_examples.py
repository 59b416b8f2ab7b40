"""The worked examples of reference §5, row by row.

History ``[SYS, S1*, S2*, H1u, H2m, H3u, H4m, H5u]`` (``*`` = example dialogue);
O and C are the memory block's items, N the nudge, LP a lower-priority tail
message that is itself tagged as dialogue.
"""

from __future__ import annotations

import attrs
import pytest

from stm_core.inject import inject, insert_at_dialogue_depth
from stm_core.models import DIALOGUE_HISTORY, DIALOGUE_SAMPLE, ContextItem, StmContext


@attrs.frozen
class Item:
    name: str
    tag: str
    role: str = "user"


HISTORY = (
    Item("SYS", "SYSTEM_PROMPT", "system"),
    Item("S1", DIALOGUE_SAMPLE),
    Item("S2", DIALOGUE_SAMPLE, "assistant"),
    Item("H1u", DIALOGUE_HISTORY),
    Item("H2m", DIALOGUE_HISTORY, "assistant"),
    Item("H3u", DIALOGUE_HISTORY),
    Item("H4m", DIALOGUE_HISTORY, "assistant"),
    Item("H5u", DIALOGUE_HISTORY),
)
OTHER = ContextItem(text="O", kind="other_channels")
SAME = ContextItem(text="C", kind="same_channel")
NUDGE = ContextItem(text="N", kind="nudge")


def names(items: list[object]) -> list[str]:
    return [i.text if isinstance(i, ContextItem) else i.name for i in items]  # type: ignore[attr-defined]


def run(history: tuple[Item, ...] | list[Item], *, nudge: int | None = None,
        content: int | None = None) -> list[str]:
    ctx = StmContext(memory_items=(OTHER, SAME) if content is not None else (),
                     nudge_item=NUDGE if nudge is not None else None,
                     nudge_injection_depth=nudge if nudge is not None else 2,
                     memory_injection_depth=content if content is not None else -1)
    return names(inject(list(history), ctx))


BASE = ["SYS", "S1", "S2", "H1u", "H2m", "H3u", "H4m", "H5u"]


@pytest.mark.parametrize(("nudge", "expected"), [
    (0, [*BASE, "N"]),
    (1, ["SYS", "S1", "S2", "H1u", "H2m", "H3u", "H4m", "N", "H5u"]),
    (2, ["SYS", "S1", "S2", "H1u", "H2m", "H3u", "N", "H4m", "H5u"]),
    (5, ["SYS", "S1", "S2", "N", "H1u", "H2m", "H3u", "H4m", "H5u"]),
    # More than five turns: clamps above H1u, never inside the samples.
    (9, ["SYS", "S1", "S2", "N", "H1u", "H2m", "H3u", "H4m", "H5u"]),
])
def test_nudge_depths(nudge: int, expected: list[str]) -> None:
    assert run(HISTORY, nudge=nudge) == expected


def test_empty_history_appends_the_nudge() -> None:
    assert run(HISTORY[:3], nudge=2) == ["SYS", "S1", "S2", "N"]


@pytest.mark.parametrize(("content", "nudge", "tail"), [
    (2, 2, ["H3u", "O", "C", "N", "H4m", "H5u"]),
    (2, 1, ["H3u", "O", "C", "H4m", "N", "H5u"]),
    # A fresh block at 2 with the nudge raised to 3: the nudge sits above the block.
    (2, 3, ["H2m", "N", "H3u", "O", "C", "H4m", "H5u"]),
    (0, 0, ["H4m", "H5u", "O", "C", "N"]),
])
def test_block_and_nudge(content: int, nudge: int, tail: list[str]) -> None:
    result = run(HISTORY, content=content, nudge=nudge)
    assert result[-len(tail):] == tail
    assert len(result) == len(HISTORY) + 3


def test_anchored_block_stays_above_the_samples() -> None:
    assert run(HISTORY, content=-1, nudge=2) == [
        "SYS", "O", "C", "S1", "S2", "H1u", "H2m", "H3u", "N", "H4m", "H5u"]


def with_lower_priority() -> list[Item]:
    """The lower-priority tail message goes in first, before the latest pair."""
    lp = Item("LP", DIALOGUE_HISTORY)
    return insert_at_dialogue_depth(list(HISTORY), lp, 2)


def test_lower_priority_message_then_nudge_at_2() -> None:
    assert run(with_lower_priority(), nudge=2)[-5:] == ["H3u", "LP", "N", "H4m", "H5u"]


def test_lower_priority_message_counts_as_a_turn() -> None:
    assert run(with_lower_priority(), nudge=3)[-5:] == ["H3u", "N", "LP", "H4m", "H5u"]
