"""Where an unchanged memory block stays under the ``stable`` cache policy.

A depth counts from the tail, and the tail moves every turn; so a block that
is to stay put needs the host's previous prompt. Given it, an unchanged block
stays exactly where it was as long as everything above it is unchanged too,
and the whole previous prompt (but a nudge at its end) is then the start of
the new one: a provider's prompt cache serves all of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stm_core.inject.base import MessageFormat
from stm_core.inject.chat import CHAT
from stm_core.inject.markers import injected_item
from stm_core.inject.walk import keep_tool_calls_together
from stm_core.models import STM_TAG, ContextItem


def carries(message: object, item: ContextItem, fmt: MessageFormat) -> bool:
    """Whether ``message`` is ``item`` as ``inject`` inserted it: an
    :class:`~stm_core.inject.markers.StmMessage` (or the item itself), or, once
    the prompt went through JSON, a dict tagged as stm's with the same body."""
    found = injected_item(message)
    if found is not None:
        return found == item
    if not isinstance(message, Mapping) or message.get("tag") != STM_TAG:
        return False
    return {k: v for k, v in message.items() if k != "tag"} == fmt.message(item)


def kept_block_index(messages: Sequence[object], previous: Sequence[object],
                     block: Sequence[ContextItem], fmt: MessageFormat = CHAT) -> int | None:
    """Where ``block`` sat in ``previous``, as an index into ``messages``, or
    ``None`` when it cannot stay there: ``previous`` must hold the block's
    items, in order, as one run, and everything above the run must be the
    start of ``messages``."""
    size = len(block)
    if not size:
        return None
    for at in range(len(previous) - size + 1):
        if all(carries(previous[at + i], item, fmt) for i, item in enumerate(block)):
            if at <= len(messages) and list(previous[:at]) == list(messages[:at]):
                return keep_tool_calls_together(messages, at, fmt)
            return None
    return None
