"""Injected messages can be found again, told apart, and survive copies."""

from __future__ import annotations

import copy
import json
import pickle

from stm_core.inject import StmMessage, find_injected, inject, strip_injected
from stm_core.models import ContextItem, StmContext

SAME = ContextItem(text="memory", kind="same_channel")
NUDGE = ContextItem(text="nudge", kind="nudge")
CTX = StmContext(memory_items=(SAME,), memory_injection_depth=1,
                 nudge_item=NUDGE, nudge_injection_depth=0)


def dialogue() -> list[dict[str, str]]:
    return [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def test_the_nudge_and_the_block_are_told_apart() -> None:
    out = inject(dialogue(), CTX)
    block, nudge = out[1], out[3]
    assert isinstance(block, StmMessage) and isinstance(nudge, StmMessage)
    assert (block.kind, block.is_nudge) == ("same_channel", False)
    assert (nudge.kind, nudge.is_nudge) == ("nudge", True)
    assert find_injected(out) == [(1, SAME), (3, NUDGE)]


def test_nothing_extra_goes_on_the_wire() -> None:
    out = inject(dialogue(), CTX)
    assert json.loads(json.dumps(out)) == [
        {"role": "user", "content": "hi"}, {"role": "user", "content": "memory"},
        {"role": "assistant", "content": "hello"}, {"role": "user", "content": "nudge"}]


def test_markers_survive_deep_copies_and_pickles() -> None:
    out = inject(dialogue(), CTX)
    for copied in (copy.deepcopy(out), pickle.loads(pickle.dumps(out))):
        assert find_injected(copied) == [(1, SAME), (3, NUDGE)]
        assert strip_injected(copied) == dialogue()


def test_host_messages_that_look_the_same_are_not_taken_for_ours() -> None:
    lookalike = [{"role": "user", "content": "memory"}, *dialogue()]
    assert find_injected(lookalike) == []
    assert strip_injected(lookalike) == lookalike
