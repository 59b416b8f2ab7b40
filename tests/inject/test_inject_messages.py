"""``inject`` on OpenAI-style chat messages and on our own items."""

from __future__ import annotations

from typing import Any

from stm_core.inject import anchored_index, inject, insert_at_dialogue_depth
from stm_core.models import DIALOGUE_SAMPLE, STM_TAG, ContextItem, StmContext

BLOCK = (ContextItem(text="memory", kind="same_channel"),)
NUDGE = ContextItem(text="nudge", kind="nudge")


def chat() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are Tomori."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function"}, {"id": "c2", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "22C"},
        {"role": "assistant", "content": "Sunny and 22C."},
        {"role": "user", "content": "thanks"},
    ]


def contents(messages: list[dict[str, Any]]) -> list[str | None]:
    return [m["content"] for m in messages]


def test_items_become_user_messages_without_tags_by_default() -> None:
    out = inject(chat(), StmContext(nudge_item=NUDGE, nudge_injection_depth=0))
    assert out[-1] == {"role": "user", "content": "nudge"}


def test_keep_tags_marks_inserted_messages() -> None:
    out = inject(chat(), StmContext(nudge_item=NUDGE, nudge_injection_depth=0), keep_tags=True)
    assert out[-1] == {"role": "user", "content": "nudge", "tag": STM_TAG}


def test_tool_messages_and_system_messages_are_not_turns() -> None:
    # Turns from the end: "thanks", "Sunny...", the tool-calling assistant, "weather?".
    out = inject(chat(), StmContext(nudge_item=NUDGE, nudge_injection_depth=3))
    assert contents(out)[3:6] == ["weather?", "nudge", None]


def test_a_depth_inside_a_tool_group_moves_above_the_call() -> None:
    messages = chat()
    for m in messages[1:]:
        m["tag"] = "DIALOGUE_HISTORY"  # every history item counts, tool results too
    # Depth 3 would land between the two tool results.
    out = inject(messages, StmContext(nudge_item=NUDGE, nudge_injection_depth=3))
    at = contents(out).index("nudge")
    assert out[at + 1]["tool_calls"]
    assert [m["role"] for m in out[at + 1:at + 4]] == ["assistant", "tool", "tool"]


def test_a_pending_tool_call_at_the_tail_is_not_followed_by_the_nudge() -> None:
    messages = chat()[:5]  # ends with the assistant's tool call, results pending
    out = inject(messages, StmContext(nudge_item=NUDGE, nudge_injection_depth=0))
    assert out[-1] is messages[-1]
    assert out[-2]["content"] == "nudge"


def test_anchored_block_goes_after_leading_system_messages_by_default() -> None:
    messages = [{"role": "system", "content": "a"}, {"role": "system", "content": "b"},
                {"role": "user", "content": "ex", "tag": DIALOGUE_SAMPLE},
                {"role": "user", "content": "hi"}]
    assert anchored_index(messages) == 2
    out = inject(messages, StmContext(memory_items=BLOCK, memory_injection_depth=-1))
    assert contents(out) == ["a", "b", "memory", "ex", "hi"]


def test_anchor_index_places_an_anchored_block_where_the_host_says() -> None:
    out = inject(chat(), StmContext(memory_items=BLOCK, memory_injection_depth=-1),
                 anchor_index=0)
    assert out[0] == {"role": "user", "content": "memory"}


def test_anchor_index_is_ignored_at_a_real_depth() -> None:
    out = inject(chat(), StmContext(memory_items=BLOCK, memory_injection_depth=0),
                 anchor_index=0)
    assert out[-1]["content"] == "memory"


def test_empty_context_returns_a_copy() -> None:
    messages = chat()
    out = inject(messages, StmContext())
    assert out == messages and out is not messages


def test_tagged_items_get_our_items_not_dicts() -> None:
    history = [ContextItem(text="turn", kind="same_channel", tag="DIALOGUE_HISTORY")]
    out = inject(history, StmContext(nudge_item=NUDGE, nudge_injection_depth=1))
    assert out == [NUDGE, history[0]]


def test_as_dicts_overrides_the_detection() -> None:
    out = inject([], StmContext(nudge_item=NUDGE), as_dicts=False)
    assert out == [NUDGE]


def test_insert_at_dialogue_depth_does_not_change_its_input() -> None:
    messages = chat()
    out = insert_at_dialogue_depth(messages, {"role": "user", "content": "x"}, 1)
    assert len(messages) == 9 and len(out) == 10
    assert out[-2]["content"] == "x"


def test_custom_dialogue_predicate() -> None:
    def only_users(m: dict[str, Any]) -> bool:
        return bool(m["role"] == "user")

    out = inject(chat(), StmContext(nudge_item=NUDGE, nudge_injection_depth=2),
                 is_dialogue=only_users)
    assert contents(out)[3:5] == ["nudge", "weather?"]
