"""Under the ``stable`` cache policy an unchanged block stays where the
previous prompt had it, so the previous prompt remains the new one's start."""

from __future__ import annotations

from typing import Any

import pytest

from stm_core.errors import ValidationError
from stm_core.inject import inject, kept_block_index
from stm_core.models import ContextItem, StmContext

OTHER = ContextItem(text="other channels", kind="other_channels")
SAME = ContextItem(text="this channel", kind="same_channel")
NUDGE = ContextItem(text="nudge", kind="nudge")


def ctx(*items: ContextItem, policy: str = "stable", nudge: bool = False) -> StmContext:
    return StmContext(memory_items=items, nudge_item=NUDGE if nudge else None,
                      memory_injection_depth=0, nudge_injection_depth=0, cache_policy=policy)


def dialogue(turns: int) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "sys"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
        for i in range(turns)]


def text(messages: list[Any]) -> str:
    return "".join(f"{m['role']}:{m['content']}|" for m in messages)


def test_an_unchanged_block_stays_put_and_the_old_prompt_stays_the_prefix() -> None:
    first = inject(dialogue(3), ctx(OTHER, SAME, nudge=True))
    assert [m["content"] for m in first[-3:]] == ["other channels", "this channel", "nudge"]
    previous = first
    for turns in (5, 7, 9):
        out = inject(dialogue(turns), ctx(OTHER, SAME), previous=previous)
        without_nudge = [m for m in previous if m["content"] != "nudge"]
        assert text(out).startswith(text(without_nudge))
        assert [m["content"] for m in out[4:6]] == ["other channels", "this channel"]
        previous = out


def test_a_changed_block_goes_where_its_depth_says() -> None:
    previous = inject(dialogue(3), ctx(OTHER, SAME))
    changed = ContextItem(text="this channel, rewritten", kind="same_channel")
    out = inject(dialogue(5), ctx(OTHER, changed), previous=previous)
    assert [m["content"] for m in out[-2:]] == ["other channels", "this channel, rewritten"]
    fewer = inject(dialogue(5), ctx(SAME), previous=previous)
    assert fewer[-1]["content"] == "this channel", "a different set of items is a change too"


def test_a_changed_prompt_above_the_block_releases_it() -> None:
    previous = inject(dialogue(4), ctx(OTHER))
    slid = dialogue(6)
    del slid[1:3]  # a sliding history window dropped the oldest turns
    assert inject(slid, ctx(OTHER), previous=previous)[-1]["content"] == "other channels"
    system_changed = [{"role": "system", "content": "new sys"}, *dialogue(6)[1:]]
    assert inject(system_changed, ctx(OTHER), previous=previous)[-1]["content"] == \
        "other channels"


def test_freshness_ignores_the_previous_prompt() -> None:
    previous = inject(dialogue(3), ctx(SAME, policy="freshness"))
    out = inject(dialogue(5), ctx(SAME, policy="freshness"), previous=previous)
    assert out[-1]["content"] == "this channel"


def test_previous_prompt_shapes_that_hold_no_block() -> None:
    for previous in ([], dialogue(9), [{"role": "system", "content": "this channel"}]):
        assert kept_block_index(dialogue(3), previous, (SAME,)) is None
    # A previous prompt longer than the new one (the host restarted the dialogue).
    longer = inject(dialogue(9), ctx(SAME))
    assert kept_block_index(dialogue(3), longer, (SAME,)) is None


def test_tagged_items_stay_put_too() -> None:
    items = [ContextItem(text="sys", kind="nudge", tag="SYSTEM_PROMPT")] + [
        ContextItem(text=f"m{i}", kind="same_channel", tag="DIALOGUE_HISTORY")
        for i in range(4)]
    previous = inject(items[:3], ctx(OTHER), as_dicts=False)
    out = inject(items, ctx(OTHER), as_dicts=False, previous=previous)
    assert out[:len(previous)] == previous and out[3] is OTHER


def test_the_kept_place_never_splits_a_tool_call() -> None:
    calls = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    base = dialogue(2)
    # A (hand-built) previous prompt with the block right after a tool call.
    previous = [*base, calls, {"role": "user", "content": "other channels"}]
    out = inject([*base, calls, result], ctx(OTHER), previous=previous)
    assert out.index(result) == out.index(calls) + 1


@pytest.mark.parametrize("bad", [5, "abc", b"xx", {"role": "user"}, object()])
def test_a_previous_prompt_that_is_no_list_is_refused(bad: object) -> None:
    with pytest.raises(ValidationError, match="previous"):
        inject(dialogue(3), ctx(SAME), previous=bad)  # type: ignore[arg-type]


def test_previous_entries_of_any_shape_only_fail_to_match() -> None:
    out = inject(dialogue(3), ctx(SAME), previous=[None, 3, "this channel", {"x": 1}])
    assert out[-1]["content"] == "this channel"


def test_a_previous_prompt_that_went_through_json_keeps_the_block_when_tagged() -> None:
    import json

    sent = inject(dialogue(3), ctx(OTHER, SAME), keep_tags=True)
    stored = json.loads(json.dumps(sent))
    out = inject(dialogue(5), ctx(OTHER, SAME), keep_tags=True, previous=stored)
    assert json.loads(json.dumps(out))[:len(stored)] == stored
    untagged = json.loads(json.dumps(inject(dialogue(3), ctx(OTHER, SAME))))
    moved = inject(dialogue(5), ctx(OTHER, SAME), previous=untagged)
    assert moved[-1]["content"] == "this channel", "untagged, it is not known as stm's"


def test_the_block_stays_put_in_anthropic_messages_too() -> None:
    chat = [{"role": "user" if i % 2 == 0 else "assistant",
             "content": [{"type": "text", "text": f"m{i}"}]} for i in range(5)]
    previous = inject(chat[:3], ctx(SAME), format="anthropic")
    out = inject(chat, ctx(SAME), format="anthropic", previous=previous)
    assert out[:4] == previous and out[3].item == SAME


def test_the_same_turn_built_again_keeps_its_block_at_the_very_end() -> None:
    """A regenerated reply sends the same messages again: the block that closed
    the previous prompt stays last, though its depth would put it higher."""
    block = inject(dialogue(1), ctx(OTHER))[-1]
    previous = [*dialogue(3), block]
    deeper = StmContext(memory_items=(OTHER,), memory_injection_depth=2,
                        nudge_injection_depth=0, cache_policy="stable")

    assert inject(dialogue(3), deeper, previous=previous) == previous
    assert inject(dialogue(3), deeper)[-1] != block  # where depth 2 alone puts it


def test_the_kept_place_never_splits_an_anthropic_tool_use_from_its_result() -> None:
    chat = [{"role": "user" if i % 2 == 0 else "assistant",
             "content": [{"type": "text", "text": f"m{i}"}]} for i in range(3)]
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f",
                                             "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                           "content": "ok"}]}
    block = inject(chat, ctx(OTHER), format="anthropic")[-1]
    # A (hand-built) previous prompt with the block right after the tool use.
    previous = [*chat, use, block]

    out = inject([*chat, use, result], ctx(OTHER), format="anthropic", previous=previous)

    assert out.index(result) == out.index(use) + 1
    assert block in out
