"""Prefix reuse arithmetic: shares, the first turn, the cost estimate."""

from __future__ import annotations

import pytest

from stm_core.inject.prompt_reuse import (
    CACHE_READ_PRICE,
    CACHE_WRITE_PRICE,
    HostPrompts,
    PrefixReuse,
    assemble,
    prompt_text,
    shared_prefix,
    without_memory,
)
from stm_core.models import ContextItem, StmContext


def test_shares_are_measured_per_conversation_from_the_second_turn() -> None:
    reuse = PrefixReuse()
    assert reuse.observe("a", "0123456789") is None
    assert reuse.observe("b", "zzzz") is None, "another conversation has no previous"
    assert reuse.observe("a", "0123456789ab") == pytest.approx(10 / 12)
    assert reuse.observe("a", "X123") == 0.0
    figures = reuse.figures()
    assert figures.turns == 2
    assert figures.mean_share == pytest.approx((10 / 12 + 0) / 2)
    assert figures.char_share == pytest.approx(10 / 16)
    expected = (CACHE_READ_PRICE * 10 + CACHE_WRITE_PRICE * 6) / 16
    assert figures.relative_cost == pytest.approx(expected)


def test_no_turns_costs_as_much_as_no_cache() -> None:
    figures = PrefixReuse().figures()
    assert (figures.turns, figures.relative_cost) == (0, 1.0)


def test_assemble_splices_the_block_and_the_nudge() -> None:
    ctx = StmContext(memory_items=(ContextItem(text="MEMORY", kind="same_channel"),),
                     nudge_item=ContextItem(text="NUDGE", kind="nudge"),
                     memory_injection_depth=0, nudge_injection_depth=0)
    prompt = assemble("SYS", [{"role": "user", "content": "hi"}], ctx)
    assert prompt.index("SYS") < prompt.index("hi") < prompt.index("MEMORY") < prompt.index(
        "NUDGE")
    assert shared_prefix(prompt, prompt + "more") == len(prompt)


def test_steady_turns_and_the_kept_share() -> None:
    reuse = PrefixReuse()
    reuse.observe("a", "SYS|M1|", memory=["M1"])
    reuse.observe("a", "SYS|M1|hi|", memory=["M1"])     # steady, keeps all 7 chars
    reuse.observe("a", "SYS|M2|hi|yo|", memory=["M2"])  # memory changed: keeps "SYS|M"
    reuse.observe("a", "SYS|M2|hi|yo|ok|")              # memory not told: not steady
    figures = reuse.figures()
    assert figures.steady_turns == 1
    assert figures.steady_mean_share == pytest.approx(7 / 10)
    assert figures.kept_share == pytest.approx((7 / 7 + 5 / 10 + 13 / 13) / 3)
    assert figures.to_dict()["steady_turns"] == 1


def test_the_host_hands_inject_its_previous_prompt_per_conversation() -> None:
    block = (ContextItem(text="MEMORY", kind="same_channel"),)
    ctx = StmContext(memory_items=block, memory_injection_depth=0, cache_policy="stable")
    host = HostPrompts()
    one = [{"role": "system", "content": "S"}, {"role": "user", "content": "a"}]
    two = [*one, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert host.prompt("x", one, ctx)[-1]["content"] == "MEMORY"
    assert host.prompt("y", two, ctx)[-1]["content"] == "MEMORY", "conversations are apart"
    kept = host.prompt("x", two, ctx)
    assert [m["content"] for m in kept] == ["S", "a", "MEMORY", "b", "c"]
    assert without_memory(two) == prompt_text(two)
