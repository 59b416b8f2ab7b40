"""What a cached row renders to, remembered across turns.

A cached row never changes once cached (a new revision is a new object), so
the text a row renders to depends only on the row and on the per-turn inputs
named in each memo key: names and labels from the turn, the render mode, the
category order of the row's server. What moves with the clock enters a key
as the label it produces, so an age that reads differently is a new key.
Expiry, visibility, mention conversion and the prompt budget run on every
turn and are never remembered.

Keys name rows and orders by ``id``; each entry keeps those objects alive, so
no id can be reused while its entry exists. The memo is the plugin set's
(:meth:`stm_core.hooks.Hooks.plugin_set_memo`): a new plugin set starts with
an empty one. It starts over when it holds :data:`MAX_ENTRIES` entries or
:data:`~stm_core.text_memo.MAX_CHARS` characters of texts and rows: the rows
it keeps alive may have left the cache, and with the prompt budget off one
row can hold a long summary, so a count of entries alone bounds nothing.
"""

from __future__ import annotations

from typing import Any

from stm_core.storage.records import MemoryRecord
from stm_core.text_memo import TextMemo

#: Rendered texts kept per store and plugin set before the memo starts over.
MAX_ENTRIES = 1024

#: ``key -> (text, objects the key names by id)``.
RenderMemo = TextMemo[tuple[Any, ...], tuple[Any, ...]]


def new_render_memo() -> RenderMemo:
    return TextMemo(max_entries=MAX_ENTRIES)


def remember(memo: RenderMemo, key: tuple[Any, ...], text: str | None,
             record: MemoryRecord, *keep: object) -> None:
    """Store ``text`` under ``key``, keeping alive ``record`` and the other
    objects ``key`` names by id."""
    if memo.full():
        memo.clear()
    memo.remember(key, (text, record, *keep), len(text or "") + record_chars(record))


def record_chars(record: MemoryRecord) -> int:
    """The characters of a row's texts (what keeping it alive holds)."""
    return (len(record.summary or "") + sum(map(len, record.categories.values()))
            + sum(len(m.content) for m in record.messages))
