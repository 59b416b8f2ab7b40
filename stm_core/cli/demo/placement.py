"""Splice stm's items into the dialogue with :func:`stm_core.inject.inject` and
find out where each one landed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from stm_core.cli.demo.results import InjectedItem, PromptMessage
from stm_core.inject import inject
from stm_core.models import ContextItem, StmContext


@attrs.frozen(kw_only=True)
class Placement:
    messages: tuple[PromptMessage, ...]
    memory_items: tuple[InjectedItem, ...]
    nudge: InjectedItem | None


def place(dialogue: Sequence[dict[str, Any]], ctx: StmContext) -> Placement:
    """Inject ``ctx`` into an OpenAI-style message list and locate every item.

    ``inject`` returns the host's own message objects unchanged, so anything
    that is not one of them is an stm item; its text says which one.
    """
    final = inject(dialogue, ctx)
    originals = {id(m) for m in dialogue}
    pending: list[ContextItem] = [*ctx.memory_items]
    if ctx.nudge_item is not None:
        pending.append(ctx.nudge_item)
    found: dict[int, int] = {}  # index into pending -> index in final
    messages = []
    for index, message in enumerate(final):
        content = str(message.get("content", ""))
        kind = None
        if id(message) not in originals:
            for i, item in enumerate(pending):
                if i not in found and item.text == content:
                    found[i] = index
                    kind = item.kind
                    break
        messages.append(PromptMessage(role=str(message.get("role", "")), content=content,
                                      injected=kind))
    located = [InjectedItem(kind=item.kind, text=item.text, index=found.get(i))
               for i, item in enumerate(pending)]
    nudge = located.pop() if ctx.nudge_item is not None else None
    return Placement(messages=tuple(messages), memory_items=tuple(located), nudge=nudge)
