"""Stage 9b, the prompt budget (DESIGN decision 17).

The whole short-term-memory block of a turn (other channels, the same-channel
memory, the nudge) is held to ``prompt_budget_tokens`` tokens, counted by the
``stm_token_counter`` hook. Over budget, it gives up, in this order, until it
fits:

1. raw lines of the other channels, oldest first (every channel keeps its
   newest lines longest);
2. other channels, least recently updated first;
3. the end of the same-channel memory, cut with a mark
   (:data:`stm_core.text.truncation.BUDGET_TRUNCATION_MARK`); with no room even for
   the mark, the same-channel memory goes too.

The same-channel memory is what the model is working with right now, so it
is the last thing to shrink. The nudge is counted but never cut: it is one
short instruction. Under budget (the usual turn) this stage costs one count
per emitted text; with the budget off (0) it counts nothing, and neither
does it when the counter is byte-bounded (:func:`hookspecs.types.byte_bounded`)
and the texts have no more UTF-8 bytes than the budget has tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from hookspecs.types import TokenCounter, is_byte_bounded
from stm_core.text.truncation import BUDGET_TRUNCATION_MARK, cut

#: ``(other channels kept, raw lines kept per channel) -> (text or None, newest)``.
RenderOther = Callable[[int, int], tuple[str | None, int | None]]


class Block(NamedTuple):
    """What fits: the texts to emit and the newest other-channel update shown
    (a tuple: one is made on every turn)."""

    other: str | None
    same: str | None
    newest_other_ms: int | None


def fit_budget(budget: int, count: TokenCounter, *, nudge: str | None,
               render_other: RenderOther, entries: int, raw_lines: int,
               same_body: str | None, render_same: Callable[[str], str]) -> Block:
    """The largest block that fits ``budget`` tokens, degraded in the order above."""
    same = render_same(same_body) if same_body is not None else None
    other, newest = render_other(entries, raw_lines) if entries else (None, None)
    if within_budget(budget, count, nudge, same, other):
        return Block(other=other, same=same, newest_other_ms=newest)
    for raw in range(raw_lines - 1, -1, -1):
        other, newest = render_other(entries, raw)
        if within_budget(budget, count, nudge, same, other):
            return Block(other=other, same=same, newest_other_ms=newest)
    for kept in range(entries - 1, 0, -1):
        other, newest = render_other(kept, 0)
        if within_budget(budget, count, nudge, same, other):
            return Block(other=other, same=same, newest_other_ms=newest)
    if same_body is None or within_budget(budget, count, nudge, same, None):
        return Block(other=None, same=same, newest_other_ms=None)

    def fits(same: str) -> bool:
        return within_budget(budget, count, nudge, same, None)

    return Block(other=None, same=_cut_to_fit(same_body, fits, render_same),
                 newest_other_ms=None)


def within_budget(budget: int, count: TokenCounter, nudge: str | None, same: str | None,
                  other: str | None) -> bool:
    """The nudge and a block's texts fit ``budget`` tokens. The one place
    they are counted: with no budget nothing is; nor with a byte-bounded
    counter when the texts' UTF-8 length (found without encoding: a
    character takes at most 4 bytes) is within the budget."""
    if budget <= 0:
        return True
    texts = (nudge, same, other)
    most = 0
    for text in texts:
        if text:
            most += len(text) if text.isascii() else 4 * len(text)
    if most <= budget and is_byte_bounded(count):
        return True
    tokens = 0
    for text in texts:
        if text:
            tokens += count(text)
    return tokens <= budget


def _cut_to_fit(body: str, fits: Callable[[str], bool],
                render: Callable[[str], str]) -> str | None:
    """The rendering of the longest marked start of ``body`` that ``fits``
    (binary search on its length), or ``None`` when nothing does."""
    # Some text besides the mark, or nothing at all.
    low, high, best = len(BUDGET_TRUNCATION_MARK) + 1, len(body) - 1, None
    while low <= high:
        length = (low + high) // 2
        text = render(cut(body, length, BUDGET_TRUNCATION_MARK))
        if fits(text):
            best, low = text, length + 1
        else:
            high = length - 1
    return best
