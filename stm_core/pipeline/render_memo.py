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
an empty one. It is emptied when it reaches :data:`MAX_ENTRIES`, which bounds
its memory: the rows it holds may have left the cache, so the bound is small
(a turn adds one entry per row it shows, and only when an input changed).
"""

from __future__ import annotations

from typing import Any

#: Rendered texts kept per store and plugin set before the memo starts over.
MAX_ENTRIES = 1024

#: ``key -> (text, objects the key names by id)``.
RenderMemo = dict[tuple[Any, ...], tuple[Any, ...]]


def remember(memo: RenderMemo, key: tuple[Any, ...], text: str | None,
             *keep: object) -> None:
    """Store ``text`` under ``key``, keeping alive the objects ``key`` names by id."""
    if len(memo) >= MAX_ENTRIES:
        memo.clear()
    memo[key] = (text, *keep)
