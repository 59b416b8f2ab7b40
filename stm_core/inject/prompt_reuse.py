"""How much of each turn's prompt a provider's prompt cache could serve.

Provider caches (OpenAI, Anthropic, Gemini, DeepSeek) bill the part of a
prompt that repeats the start of an earlier prompt at a fraction of the input
price. Here a prompt is assembled the way a cache-aware host sends it (system
prompt, the conversation's whole dialogue, stm's items spliced in by
:func:`stm_core.inject.inject` given the conversation's previous prompt, see
:class:`HostPrompts`) and compared with the same conversation's previous
prompt: the *reuse share* of a turn is the length of their common prefix over
the new prompt's length.

The new dialogue of a turn (the last reply, the new messages) is never in the
previous prompt, so even a prompt without any memory reuses less than all of
it; short conversations reuse little. Two figures separate what memory costs
from that: the mean over *steady* turns (memory text unchanged since the
conversation's previous turn), and the same conversation measured without
memory (:func:`without_memory`).

The cost estimate uses Anthropic's published prompt-caching prices: a cache
read costs 0.1x the base input price, a (5-minute) cache write 1.25x. Every
character past the reused prefix is counted as a cache write, the rest as a
cache read; the figure is relative to sending the same prompts uncached (1.0).
The estimate assumes the cache is still warm, i.e. the conversation's turns
come within the provider's cache lifetime.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from stm_core.inject import inject
from stm_core.models import StmContext

#: Anthropic: cache reads cost 0.1x the base input price.
CACHE_READ_PRICE = 0.1
#: Anthropic: 5-minute cache writes cost 1.25x the base input price.
CACHE_WRITE_PRICE = 1.25


def prompt_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The prompt as a provider tokenises it: the messages in order."""
    return "".join(f"<{m.get('role')}>\n{m.get('content')}\n" for m in messages)


def assemble(system: str, dialogue: Sequence[Mapping[str, Any]], ctx: StmContext) -> str:
    """A system message, the dialogue, and the turn's memory spliced in."""
    return prompt_text(inject([{"role": "system", "content": system}, *dialogue], ctx))


def without_memory(messages: Sequence[Mapping[str, Any]]) -> str:
    """The prompt with no memory at all: the baseline a policy is judged against."""
    return prompt_text(messages)


class HostPrompts:
    """A cache-aware host: per conversation it sends the whole dialogue and
    hands :func:`~stm_core.inject.inject` the prompt it sent last turn, so that
    under the ``stable`` policy an unchanged block stays where it was."""

    def __init__(self) -> None:
        self._previous: dict[Hashable, list[Any]] = {}

    def prompt(self, conversation: Hashable, messages: Sequence[Mapping[str, Any]],
               ctx: StmContext) -> list[Any]:
        out = inject(messages, ctx, previous=self._previous.get(conversation))
        self._previous[conversation] = out
        return out


def shared_prefix(previous: str, current: str) -> int:
    """Characters the two prompts share from the start."""
    return len(os.path.commonprefix([previous, current]))  # noqa: RUF071 (text, not paths)


@attrs.frozen(kw_only=True)
class ReuseFigures:
    """Turn-over-turn reuse of a run (turns without a previous prompt excluded)."""

    turns: int
    #: Mean of the per-turn shares (0-1): the figure the target is set on.
    mean_share: float
    #: Reused characters over all characters (long prompts weigh more).
    char_share: float
    #: Estimated input cost with caching, relative to no caching (1.0).
    relative_cost: float
    #: Mean share of the *previous* prompt found again at the new prompt's start
    #: (1.0: nothing before the new dialogue changed or moved).
    kept_share: float = 0.0
    #: Turns whose memory text was the same as on the conversation's previous turn.
    steady_turns: int = 0
    #: Mean share over those turns (0 when there are none).
    steady_mean_share: float = 0.0

    def to_dict(self) -> dict[str, float | int]:
        return {"turns": self.turns, "mean_share": round(self.mean_share, 4),
                "char_share": round(self.char_share, 4),
                "relative_cost": round(self.relative_cost, 4),
                "kept_share": round(self.kept_share, 4),
                "steady_turns": self.steady_turns,
                "steady_mean_share": round(self.steady_mean_share, 4)}


class PrefixReuse:
    """Collects each conversation's prompts and the reuse between them."""

    def __init__(self) -> None:
        self._previous: dict[Hashable, str] = {}
        self._memory: dict[Hashable, tuple[str, ...]] = {}
        self._shares: list[float] = []
        self._steady: list[float] = []
        self._kept: list[float] = []
        self._reused = 0
        self._total = 0

    def observe(self, conversation: Hashable, prompt: str,
                memory: Iterable[str] | None = None) -> float | None:
        """The share of ``prompt`` reused from the conversation's previous
        prompt, or ``None`` for its first turn. ``memory``, the turn's memory
        texts, tells steady turns (same texts as last turn) from the others."""
        previous = self._previous.get(conversation)
        self._previous[conversation] = prompt
        texts = None if memory is None else tuple(memory)
        before = self._memory.pop(conversation, None)
        if texts is not None:
            self._memory[conversation] = texts
        if previous is None or not prompt:
            return None
        reused = shared_prefix(previous, prompt)
        self._shares.append(reused / len(prompt))
        self._kept.append(reused / len(previous) if previous else 1.0)
        if texts is not None and texts == before:
            self._steady.append(self._shares[-1])
        self._reused += reused
        self._total += len(prompt)
        return self._shares[-1]

    def figures(self) -> ReuseFigures:
        if not self._total:
            return ReuseFigures(turns=0, mean_share=0.0, char_share=0.0, relative_cost=1.0)
        fresh = self._total - self._reused
        cost = (CACHE_READ_PRICE * self._reused + CACHE_WRITE_PRICE * fresh) / self._total
        steady = self._steady
        return ReuseFigures(turns=len(self._shares),
                            mean_share=sum(self._shares) / len(self._shares),
                            char_share=self._reused / self._total, relative_cost=cost,
                            kept_share=sum(self._kept) / len(self._kept),
                            steady_turns=len(steady),
                            steady_mean_share=sum(steady) / len(steady) if steady else 0.0)
