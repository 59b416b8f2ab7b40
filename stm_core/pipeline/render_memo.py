"""What a cached row renders to, remembered across turns.

A cached row never changes once cached (a new revision is a new object), so
the text a row renders to depends only on the row and on the per-turn inputs
named in each memo key: names and labels from the turn, the render mode, the
category order of the row's server. What moves with the clock enters a key
as the label it produces, so an age that reads differently is a new key.
Expiry, visibility, mention conversion and the prompt budget run on every
turn and are never remembered.

Keys name rows and orders by ``id``. An entry holds its row weakly (checked
on every hit: a row that died cannot pass for the new one that took its id)
and the other objects its key names strongly (category orders and render
functions: few and small), so the memo never keeps a row alive after the
cache let it go. The memo is the plugin set's
(:meth:`stm_core.plugins.hooks.Hooks.plugin_set_memo`): a new plugin set starts with
an empty one. It starts over at :data:`MAX_ENTRIES` entries or
:data:`~stm_core.text.memo.MAX_CHARS` characters of text: with the prompt
budget off, one rendering can be long.
"""

from __future__ import annotations

import weakref
from typing import Any

from stm_core.storage.records import MemoryRecord
from stm_core.text.memo import TextMemo

#: Rendered texts kept per store and plugin set before the memo starts over.
MAX_ENTRIES = 1024

#: ``key -> (text, weak reference to the row, objects the key names by id)``.
RenderMemo = TextMemo[tuple[Any, ...], tuple[Any, ...]]


def new_render_memo() -> RenderMemo:
    return TextMemo(max_entries=MAX_ENTRIES)


def recall(memo: RenderMemo, key: tuple[Any, ...], record: MemoryRecord) -> tuple[Any, ...] | None:
    """The entry stored under ``key`` for this very ``record``, or ``None``."""
    hit = memo.get(key)
    return hit if hit is not None and hit[1]() is record else None


def remember(memo: RenderMemo, key: tuple[Any, ...], text: str | None,
             record: MemoryRecord, *keep: object) -> None:
    """Store ``text`` under ``key`` for ``record``, keeping alive the other
    objects ``key`` names by id."""
    if memo.full():
        memo.clear()
    memo.remember(key, (text, weakref.ref(record), *keep), len(text or ""))
