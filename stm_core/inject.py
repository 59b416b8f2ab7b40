"""Splice a turn's short-term memory into the host's message list (reference §5).

Depth counts dialogue turns from the bottom: ``0`` is the tail, ``1`` sits
before the last turn, ``N`` before the N-th turn from the end, clamped to the
earliest turn when fewer exist. Example dialogues are never counted.

Two shapes of message list are understood, item by item:

* **chat-message dicts** (OpenAI style ``{"role": ..., "content": ...}``): a
  ``user`` or ``assistant`` message is a dialogue turn; ``system`` and ``tool``
  messages are not. A dict carrying a ``"tag"`` key is judged by the tag alone
  (``"DIALOGUE_HISTORY"`` counts, ``"DIALOGUE_SAMPLE"`` and anything else do not);
* **tagged objects** (our :class:`~stm_core.models.ContextItem`, or any object
  with a ``tag`` attribute): only ``DIALOGUE_HISTORY`` items count.

Under the ``stable`` cache policy a host may pass the conversation's previous
prompt (what ``inject`` returned last turn): a block whose text has not
changed then stays exactly where it was, so the previous prompt stays a prefix
of the new one and a provider's prompt cache serves all of it.

Insertion never lands between an assistant message that calls tools and its
tool results (DESIGN decision 12): such a position moves up to just before the
assistant message, so the item is never closer to the end than its depth asks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from stm_core.errors import ValidationError
from stm_core.models import DIALOGUE_HISTORY, ContextItem, StmContext

T = TypeVar("T")

#: Chat roles that count as dialogue turns when a message dict carries no tag.
DIALOGUE_ROLES = frozenset({"user", "assistant"})


def _get(item: object, name: str) -> Any:
    """A field of a message dict or an attribute of a message object."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def is_dialogue_turn(item: object) -> bool:
    """Whether ``item`` counts as one dialogue turn for depth.

    A tag decides when present; an untagged message dict counts when its role
    is ``user`` or ``assistant``.
    """
    tag = _get(item, "tag")
    if tag is not None:
        return bool(tag == DIALOGUE_HISTORY)
    return isinstance(item, Mapping) and bool(item.get("role") in DIALOGUE_ROLES)


def _is_tool_result(item: object) -> bool:
    return bool(_get(item, "role") == "tool")


def _calls_tools(item: object) -> bool:
    return bool(_get(item, "role") == "assistant") and bool(_get(item, "tool_calls"))


def splits_tool_call(items: Sequence[object], index: int) -> bool:
    """Whether inserting before ``items[index]`` would separate an assistant
    tool call from its results (or tool results from each other)."""
    if index < len(items) and _is_tool_result(items[index]):
        return True
    return index > 0 and _calls_tools(items[index - 1])


def keep_tool_calls_together(items: Sequence[object], index: int) -> int:
    """Move ``index`` up until it no longer splits a tool-call group.

    Moving up (before the assistant message) rather than down keeps at least
    the requested number of turns below the inserted item.
    """
    while index > 0 and splits_tool_call(items, index):
        index -= 1
    return index


def dialogue_insertion_index(items: Sequence[T], depth: int, *,
                             is_dialogue: Callable[[T], bool] = is_dialogue_turn,
                             protect_tool_calls: bool = True) -> int:
    """The index before which an item at dialogue ``depth`` goes.

    ``depth <= 0`` or no dialogue turn at all: the end of the list. Otherwise
    before the ``depth``-th dialogue turn counted from the end, or before the
    earliest one when there are fewer (the depth clamps, it never jumps to the
    tail).
    """
    index = len(items)
    if depth > 0:
        counted = 0
        for position in range(len(items) - 1, -1, -1):
            if is_dialogue(items[position]):
                counted += 1
                index = position
                if counted == depth:
                    break
    if protect_tool_calls:
        index = keep_tool_calls_together(items, index)
    return index


def insert_at_dialogue_depth(items: Sequence[T], item: T, depth: int, *,
                             is_dialogue: Callable[[T], bool] = is_dialogue_turn,
                             protect_tool_calls: bool = True) -> list[T]:
    """A new list with ``item`` inserted at dialogue ``depth`` (``items`` is not
    changed). See :func:`dialogue_insertion_index` for the rules."""
    index = dialogue_insertion_index(items, depth, is_dialogue=is_dialogue,
                                     protect_tool_calls=protect_tool_calls)
    out = list(items)
    out.insert(index, item)
    return out


def anchored_index(messages: Sequence[object]) -> int:
    """Where an anchored memory block goes by default: right after the leading
    ``system`` messages, so above example dialogues and the history."""
    index = 0
    while index < len(messages) and _get(messages[index], "role") == "system":
        index += 1
    return index


def _text(item: object) -> object:
    """The text of a message dict or of one of our items."""
    if isinstance(item, Mapping):
        return item.get("content")
    return getattr(item, "text", getattr(item, "content", None))


def kept_block_index(messages: Sequence[object], previous: Sequence[object],
                     block: Sequence[ContextItem]) -> int | None:
    """Where the unchanged ``block`` sat in ``previous``, as an index into
    ``messages``, or ``None`` when it cannot stay there.

    It stays only if ``previous`` holds the block's texts, in order, as one run
    of stm items and everything above that run is the same in ``messages``:
    then the whole of the previous prompt up to the block is still the new
    prompt's start.
    """
    texts = [item.text for item in block]
    size = len(texts)
    for at in range(len(previous) - size + 1):
        run = previous[at:at + size]
        if all(_get(m, "role") != "system" and _text(m) == t for m, t in zip(run, texts,
                                                                               strict=True)):
            if at <= len(messages) and list(previous[:at]) == list(messages[:at]):
                return keep_tool_calls_together(messages, at)
            return None
    return None


def as_message(item: ContextItem, *, keep_tags: bool = False) -> dict[str, Any]:
    """One of our items as a chat-message dict (``role`` is always ``user``)."""
    message: dict[str, Any] = {"role": item.role, "content": item.text}
    if keep_tags:
        message["tag"] = item.tag
    return message


def _wants_dicts(messages: Sequence[object]) -> bool:
    if not messages:
        return True
    return any(isinstance(m, Mapping) for m in messages)


def inject(messages: Sequence[Any], ctx: StmContext, *,
           anchor_index: int | None = None,
           keep_tags: bool = False,
           as_dicts: bool | None = None,
           is_dialogue: Callable[[Any], bool] = is_dialogue_turn,
           previous: Sequence[Any] | None = None) -> list[Any]:
    """The host's message list with the memory block and the nudge spliced in.

    :param messages: the assembled prompt: chat-message dicts or tagged items.
        It is not modified; a new list is returned.
    :param ctx: what :meth:`Stm.build_context` returned for this turn.
    :param anchor_index: where the memory block goes when
        ``ctx.memory_injection_depth`` is ``-1`` (anchored). By default right
        after the leading system messages (:func:`anchored_index`). Depths
        ``>= 0`` ignore it.
    :param keep_tags: in dict mode, add ``"tag": "KNOWLEDGE_SHORT_TERM_MEMORY"``
        to the inserted messages (strip it before sending if your client
        refuses unknown keys).
    :param as_dicts: insert chat-message dicts (``True``) or our
        :class:`ContextItem` objects (``False``). By default dicts when the list
        holds any dict or is empty, items otherwise.
    :param is_dialogue: what counts as one dialogue turn; see
        :func:`is_dialogue_turn`.
    :param previous: the list ``inject`` returned for this conversation's
        previous turn. Used under the ``stable`` cache policy only: a block
        whose text is unchanged stays where it was in ``previous`` when
        everything above it is unchanged too (see :func:`kept_block_index`);
        otherwise it goes where its depth says.

    The block's items keep their order. Both positions are computed on the
    original list (inserted items are never counted), and at the same position
    the block goes first, so at equal depth the nudge sits right below it.
    """
    if previous is not None and (not isinstance(previous, Sequence)
                                 or isinstance(previous, str | bytes | bytearray)):
        raise ValidationError(f"previous must be the message list inject returned on the "
                              f"previous turn, got {type(previous).__name__}",
                              field="previous", allowed="a list of messages")
    dicts = _wants_dicts(messages) if as_dicts is None else as_dicts

    def convert(item: ContextItem) -> Any:
        return as_message(item, keep_tags=keep_tags) if dicts else item

    inserts: dict[int, list[Any]] = {}
    if ctx.memory_items:
        depth = ctx.memory_injection_depth
        kept = (kept_block_index(messages, previous, ctx.memory_items)
                if previous is not None and ctx.cache_policy == "stable" else None)
        if kept is not None:
            at = kept
        elif depth >= 0:
            at = dialogue_insertion_index(messages, depth, is_dialogue=is_dialogue)
        else:
            at = anchored_index(messages) if anchor_index is None else anchor_index
            at = keep_tool_calls_together(messages, max(0, min(at, len(messages))))
        inserts.setdefault(at, []).extend(convert(i) for i in ctx.memory_items)
    if ctx.nudge_item is not None:
        at = dialogue_insertion_index(messages, ctx.nudge_injection_depth,
                                      is_dialogue=is_dialogue)
        inserts.setdefault(at, []).append(convert(ctx.nudge_item))

    if not inserts:
        return list(messages)
    out: list[Any] = []
    for position, message in enumerate(messages):
        pending = inserts.get(position)
        if pending:
            out.extend(pending)
        out.append(message)
    out.extend(inserts.get(len(messages), ()))
    return out


__all__ = [
    "DIALOGUE_ROLES",
    "anchored_index",
    "as_message",
    "dialogue_insertion_index",
    "inject",
    "insert_at_dialogue_depth",
    "is_dialogue_turn",
    "keep_tool_calls_together",
    "kept_block_index",
    "splits_tool_call",
]
