"""The objects a build returns, handed out again while their texts are the same.

A warm turn of a quiet server emits the very text objects of the last turn
(the render memo and the mention converters return what they returned
before), so the :class:`~stm_core.models.ContextItem` and
:class:`~stm_core.models.StmContext` around them can be the ones built last
time: both are frozen, and building one costs a call per field. Entries are
found by the identity of what they hold and checked by it (each entry keeps
its texts alive, so no id is reused while it exists); the table is bounded.
"""

from __future__ import annotations

from stm_core.models import ContextItem, ItemKind, StmContext
from stm_core.text_memo import TextMemo

#: Results remembered before the table starts over.
MAX_RESULTS = 1024

_items: TextMemo[tuple[int, str], ContextItem] = TextMemo(max_entries=MAX_RESULTS)
_contexts: TextMemo[tuple[int, int, int, int, int, str], StmContext] = TextMemo(
    max_entries=MAX_RESULTS)


def context_item(text: str, kind: ItemKind) -> ContextItem:
    """``ContextItem(text=text, kind=kind)``, the one made last time for this text."""
    item = _items.get((id(text), kind))
    if item is None or item.text is not text:
        if _items.full():
            _items.clear()
        item = ContextItem(text=text, kind=kind)
        _items.remember((id(text), kind), item, len(text))
    return item


def stm_context(items: tuple[ContextItem, ...], nudge_item: ContextItem | None,
                nudge_depth: int, memory_depth: int, cache_policy: str) -> StmContext:
    """The :class:`StmContext` of these (remembered) items and depths."""
    if len(items) > 2:  # never from a build; not worth a key
        return StmContext(memory_items=items, nudge_item=nudge_item,
                          nudge_injection_depth=nudge_depth,
                          memory_injection_depth=memory_depth, cache_policy=cache_policy)
    first = id(items[0]) if items else 0
    second = id(items[1]) if len(items) == 2 else 0
    key = (first, second, id(nudge_item), nudge_depth, memory_depth, cache_policy)
    context = _contexts.get(key)
    # Tuples compare their items by identity first: the usual check costs no __eq__.
    if context is None or context.nudge_item is not nudge_item or context.memory_items != items:
        if _contexts.full():
            _contexts.clear()
        context = StmContext(
            memory_items=items, nudge_item=nudge_item, nudge_injection_depth=nudge_depth,
            memory_injection_depth=memory_depth, cache_policy=cache_policy)
        chars = sum(len(item.text) for item in items)
        _contexts.remember(key, context, chars + (len(nudge_item.text) if nudge_item else 0))
    return context

