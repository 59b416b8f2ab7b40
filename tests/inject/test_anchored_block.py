"""An anchored memory block (depth -1) at a host-given ``anchor_index``: the
index is clamped into the list, and the block never lands inside a tool-call
group."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.inject import inject
from stm_core.models import ContextItem, StmContext

BLOCK = (ContextItem(text="memory", kind="same_channel"),)


def anchored() -> StmContext:
    return StmContext(memory_items=BLOCK, memory_injection_depth=-1)


def dialogue() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function"}, {"id": "c2", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "22C"},
        {"role": "assistant", "content": "Sunny."},
    ]


def where(messages: list[dict[str, Any]]) -> int:
    return [m["content"] for m in messages].index("memory")


@pytest.mark.parametrize("anchor", [6, 7, 100])
def test_an_anchor_past_the_end_puts_the_block_at_the_end(anchor: int) -> None:
    out = inject(dialogue(), anchored(), anchor_index=anchor)
    assert where(out) == 6
    assert len(out) == 7


@pytest.mark.parametrize("anchor", [-1, -50])
def test_a_negative_anchor_puts_the_block_first(anchor: int) -> None:
    out = inject(dialogue(), anchored(), anchor_index=anchor)
    assert where(out) == 0


@pytest.mark.parametrize("anchor", [3, 4, 5])
def test_an_anchor_inside_a_tool_group_moves_above_the_call(anchor: int) -> None:
    # 3 and 4 sit before a tool result, 5... is after the last result: allowed.
    out = inject(dialogue(), anchored(), anchor_index=anchor)
    expected = 2 if anchor in (3, 4) else 5
    assert where(out) == expected
    calls = [i for i, m in enumerate(out) if m.get("tool_calls")]
    results = [i for i, m in enumerate(out) if m["role"] == "tool"]
    assert results == [calls[0] + 1, calls[0] + 2]


def test_an_anchor_just_after_the_call_moves_above_it() -> None:
    out = inject(dialogue(), anchored(), anchor_index=3)
    assert [m["content"] for m in out][:4] == ["sys", "weather?", "memory", None]
