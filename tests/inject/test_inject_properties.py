"""Properties of ``inject`` on chat-message dicts, for any history and depths."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stm_core.inject import inject
from stm_core.models import DIALOGUE_HISTORY, DIALOGUE_SAMPLE, ContextItem, StmContext

Message = dict[str, Any]


def plain(role: str) -> st.SearchStrategy[list[Message]]:
    return st.just(role).map(lambda r: [{"role": r, "content": "x"}])


sample = st.sampled_from(["user", "assistant"]).map(
    lambda r: [{"role": r, "content": "example", "tag": DIALOGUE_SAMPLE}])


def tool_call(n: int) -> Message:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"c{i}"} for i in range(n)]}


tool_group = st.integers(min_value=1, max_value=3).map(lambda n: [
    tool_call(n), *({"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(n))])
# Hosts that tag every history item (as the reference does) make tool results
# count as turns, so a depth can point right between a call and its results.
tagged_tool_group = tool_group.map(lambda ms: [{**m, "tag": DIALOGUE_HISTORY} for m in ms])
# A call whose results are not in the list yet (the host is mid tool loop).
dangling_call = st.integers(min_value=1, max_value=2).map(lambda n: [tool_call(n)])

segment = st.one_of(plain("system"), plain("user"), plain("assistant"), sample, tool_group,
                    tagged_tool_group)
histories = st.tuples(st.lists(segment, max_size=14),
                      st.lists(dangling_call, max_size=1)).map(
    lambda parts: [m for part in parts[0] + parts[1] for m in part])


@st.composite
def contexts(draw: st.DrawFn) -> StmContext:
    count = draw(st.integers(min_value=0, max_value=3))
    block = tuple(ContextItem(text=f"M{i}", kind="same_channel") for i in range(count))
    nudge = ContextItem(text="N", kind="nudge") if draw(st.booleans()) else None
    return StmContext(memory_items=block, nudge_item=nudge,
                      nudge_injection_depth=draw(st.integers(min_value=-1, max_value=12)),
                      memory_injection_depth=draw(st.integers(min_value=-1, max_value=12)))


def is_turn(m: Message) -> bool:
    if "tag" in m:
        return bool(m["tag"] == DIALOGUE_HISTORY)
    return m["role"] in ("user", "assistant")


def calls_tools(m: Message) -> bool:
    return m["role"] == "assistant" and bool(m.get("tool_calls"))


def split(messages: list[Message], ctx: StmContext) -> tuple[list[Message], dict[str, int]]:
    """The output's original messages, and where each inserted text landed."""
    out = inject(messages, ctx)
    originals = {id(m) for m in messages}
    kept = [m for m in out if id(m) in originals]
    positions = {m["content"]: i for i, m in enumerate(out) if id(m) not in originals}
    return kept, positions


def turns_below(out: list[Message], position: int, originals: set[int]) -> int:
    return sum(1 for m in out[position + 1:] if id(m) in originals and is_turn(m))


@given(histories, contexts())
def test_output_is_the_input_plus_the_inserted_items(messages: list[Message],
                                                     ctx: StmContext) -> None:
    before = copy.deepcopy(messages)
    kept, positions = split(messages, ctx)
    assert messages == before  # not mutated
    assert kept == messages and all(a is b for a, b in zip(kept, messages, strict=True))
    expected = [i.text for i in ctx.memory_items] + (["N"] if ctx.nudge_item else [])
    assert sorted(positions) == sorted(expected)


@given(histories, contexts())
def test_block_keeps_its_order_and_nudge_sits_right_below_at_equal_depth(
        messages: list[Message], ctx: StmContext) -> None:
    _, positions = split(messages, ctx)
    block = [positions[i.text] for i in ctx.memory_items]
    if not block:
        return
    assert block == list(range(block[0], block[0] + len(block)))
    same_depth = (ctx.memory_injection_depth >= 0
                  and max(ctx.nudge_injection_depth, 0) == ctx.memory_injection_depth)
    if ctx.nudge_item and same_depth:
        assert positions["N"] == block[-1] + 1


@given(histories, st.integers(min_value=-1, max_value=12))
def test_depth_counts_dialogue_turns_and_clamps(messages: list[Message], depth: int) -> None:
    ctx = StmContext(nudge_item=ContextItem(text="N", kind="nudge"),
                     nudge_injection_depth=depth)
    out = inject(messages, ctx)
    originals = {id(m) for m in messages}
    at = next(i for i, m in enumerate(out) if id(m) not in originals)
    total = sum(1 for m in messages if is_turn(m))
    below = turns_below(out, at, originals)
    wanted = min(max(depth, 0), total)
    if not any(calls_tools(m) for m in messages):
        assert below == wanted
        if depth <= 0 or total == 0:
            assert at == len(out) - 1
        elif wanted == total:  # clamped: right above the earliest turn
            assert is_turn(out[at + 1])
    else:
        # A tool-call group may push the item up, never down.
        assert below >= wanted


@given(histories, contexts())
def test_tool_calls_are_never_split_from_their_results(messages: list[Message],
                                                        ctx: StmContext) -> None:
    out = inject(messages, ctx)
    originals = {id(m) for m in messages}
    for i, m in enumerate(out):
        if id(m) in originals:
            continue
        before = next((out[j] for j in range(i - 1, -1, -1) if id(out[j]) in originals), None)
        after = next((out[j] for j in range(i + 1, len(out)) if id(out[j]) in originals), None)
        assert not (before is not None and calls_tools(before))
        assert not (after is not None and after["role"] == "tool")


@given(histories, st.integers(min_value=1, max_value=12))
def test_example_dialogues_never_count(messages: list[Message], depth: int) -> None:
    """Dropping every example dialogue moves nothing relative to the turns."""
    ctx = StmContext(nudge_item=ContextItem(text="N", kind="nudge"),
                     nudge_injection_depth=depth)
    without = [m for m in messages if m.get("tag") != DIALOGUE_SAMPLE]
    full, trimmed = inject(messages, ctx), inject(without, ctx)

    def turns_after_nudge(out: list[Message]) -> list[int]:
        at = next(i for i, m in enumerate(out) if m["content"] == "N" and "tag" not in m
                  and m["role"] == "user" and id(m) not in {id(x) for x in messages})
        return [id(m) for m in out[at + 1:] if id(m) in {id(x) for x in messages}
                and is_turn(m)]

    assert turns_after_nudge(full) == turns_after_nudge(trimmed)
