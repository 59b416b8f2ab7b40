"""Splice a turn's short-term memory into the host's message list (reference §5).

Four native formats are understood (``format=``):

* ``"openai"`` (default): OpenAI Chat Completions message dicts, or tagged
  objects such as our :class:`~stm_core.models.ContextItem`
  (:mod:`stm_core.inject.chat`);
* ``"openai-responses"``: OpenAI Responses input items
  (:mod:`stm_core.inject.responses`);
* ``"anthropic"``: Anthropic Messages (:mod:`stm_core.inject.anthropic`);
* ``"gemini"``: Google Gemini ``contents`` (:mod:`stm_core.inject.gemini`).

Depth counts dialogue turns from the bottom (:mod:`stm_core.inject.walk`), and
nothing is ever inserted between a tool call and its result. Under the
``stable`` cache policy, given the previous prompt, an unchanged block stays
where it was (:mod:`stm_core.inject.kept`). Inserted messages
are :class:`~stm_core.inject.markers.StmMessage` dicts a host can find again.

Call the function by its own name: ``from stm_core.inject import inject``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal, TypeVar, overload

from stm_core.errors import ValidationError
from stm_core.inject.anthropic import ANTHROPIC
from stm_core.inject.base import MessageFormat
from stm_core.inject.chat import CHAT, DIALOGUE_ROLES, as_message, is_dialogue_turn
from stm_core.inject.gemini import GEMINI
from stm_core.inject.kept import kept_block_index
from stm_core.inject.markers import StmMessage, find_injected, injected_item, strip_injected
from stm_core.inject.responses import RESPONSES
from stm_core.inject.walk import (
    anchored_index,
    insertion_index,
    keep_tool_calls_together,
    splits_tool_call,
)
from stm_core.models import ContextItem, StmContext

T = TypeVar("T")
M = TypeVar("M")
D = TypeVar("D", bound=Mapping[str, Any])

MessageFormatKey = Literal["openai", "openai-responses", "anthropic", "gemini"]
#: Native formats by key.
MESSAGE_FORMATS: Mapping[str, MessageFormat] = {
    f.key: f for f in (CHAT, RESPONSES, ANTHROPIC, GEMINI)}


def message_format(key: object) -> MessageFormat:
    """The format registered under ``key``, or a :class:`ValidationError`."""
    found = MESSAGE_FORMATS.get(key) if isinstance(key, str) else None
    if found is None:
        allowed = ", ".join(MESSAGE_FORMATS)
        raise ValidationError(f"unknown message format {key!r}; one of: {allowed}",
                              field="format", allowed=allowed)
    return found


def dialogue_insertion_index(items: Sequence[T], depth: int, *,
                             is_dialogue: Callable[[T], bool] | None = None,
                             protect_tool_calls: bool = True,
                             format: MessageFormatKey = "openai") -> int:
    """The index before which an item at dialogue ``depth`` goes.

    ``depth <= 0`` or no dialogue turn at all: the end of the list. Otherwise
    before the ``depth``-th dialogue turn counted from the end, or before the
    earliest one when there are fewer (the depth clamps, it never jumps to the
    tail). ``is_dialogue`` replaces the format's idea of a turn.
    """
    return insertion_index(items, depth, message_format(format),
                           is_dialogue=is_dialogue,  # type: ignore[arg-type]
                           protect_tool_calls=protect_tool_calls)


def insert_at_dialogue_depth(items: Sequence[T], item: T, depth: int, *,
                             is_dialogue: Callable[[T], bool] | None = None,
                             protect_tool_calls: bool = True,
                             format: MessageFormatKey = "openai") -> list[T]:
    """A new list with ``item`` inserted at dialogue ``depth`` (``items`` is not
    changed). See :func:`dialogue_insertion_index` for the rules."""
    index = dialogue_insertion_index(items, depth, is_dialogue=is_dialogue,
                                     protect_tool_calls=protect_tool_calls, format=format)
    out = list(items)
    out.insert(index, item)
    return out


@overload
def inject(messages: Sequence[M], ctx: StmContext, *,
           format: Literal["openai-responses", "anthropic", "gemini"],
           anchor_index: int | None = None, keep_tags: bool = False,
           as_dicts: Literal[True] | None = None,
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None) -> list[M | StmMessage]: ...
@overload
def inject(messages: Sequence[D], ctx: StmContext, *,
           format: Literal["openai"] = "openai",
           anchor_index: int | None = None, keep_tags: bool = False,
           as_dicts: Literal[True] | None = None,
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None) -> list[D | StmMessage]: ...
@overload
def inject(messages: Sequence[M], ctx: StmContext, *,
           format: Literal["openai"] = "openai",
           anchor_index: int | None = None, keep_tags: bool = False,
           as_dicts: Literal[True],
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None) -> list[M | StmMessage]: ...
@overload
def inject(messages: Sequence[M], ctx: StmContext, *,
           format: Literal["openai"] = "openai",
           anchor_index: int | None = None, keep_tags: bool = False,
           as_dicts: Literal[False],
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None) -> list[M | ContextItem]: ...
@overload
def inject(messages: Sequence[M], ctx: StmContext, *,
           format: Literal["openai"] = "openai",
           anchor_index: int | None = None, keep_tags: bool = False,
           as_dicts: None = None,
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None,
           ) -> list[M | StmMessage | ContextItem]: ...
def inject(messages: Sequence[Any], ctx: StmContext, *,
           format: MessageFormatKey = "openai",
           anchor_index: int | None = None,
           keep_tags: bool = False,
           as_dicts: bool | None = None,
           is_dialogue: Callable[[Any], bool] | None = None,
           previous: Sequence[Any] | None = None,
           ) -> list[Any]:
    """The host's message list with the memory block and the nudge spliced in.

    :param messages: the assembled prompt in the native ``format``. It is not
        modified; a new list is returned.
    :param ctx: what :meth:`Stm.build_context` returned for this turn.
    :param format: ``"openai"`` (Chat Completions, the default),
        ``"openai-responses"``, ``"anthropic"`` or ``"gemini"``.
    :param anchor_index: where the memory block goes when
        ``ctx.memory_injection_depth`` is ``-1`` (anchored). By default right
        after the leading system messages (:func:`anchored_index`). Depths
        ``>= 0`` ignore it.
    :param keep_tags: also put ``"tag": "KNOWLEDGE_SHORT_TERM_MEMORY"`` in the
        inserted dicts (strip it before sending if your client refuses unknown
        keys).
    :param as_dicts: ``"openai"`` only: insert message dicts (``True``) or our
        :class:`ContextItem` objects (``False``). By default dicts when the list
        holds any dict or is empty, items otherwise. Other formats always insert
        dicts.
    :param is_dialogue: what counts as one dialogue turn, replacing the
        format's rule.
    :param previous: the list ``inject`` returned for this conversation's
        previous turn. Used under the ``stable`` cache policy only: a block
        whose items are unchanged stays where it was in ``previous`` when
        everything above it is unchanged too (:func:`kept_block_index`);
        otherwise it goes where its depth says.

    Inserted dicts are :class:`StmMessage` objects (:func:`find_injected`,
    :func:`strip_injected`). The block's items keep their order. Both positions
    are computed on the original list (inserted items are never counted), and
    at the same position the block goes first, so at equal depth the nudge
    sits right below it.
    """
    fmt = message_format(format)
    check_arguments(messages, ctx, anchor_index, previous)
    if fmt is not CHAT and as_dicts is False:
        raise ValidationError(f"as_dicts=False is for the 'openai' format only, not {format!r}",
                              field="as_dicts", allowed="True or None")
    dicts = (fmt is not CHAT or _wants_dicts(messages)) if as_dicts is None else as_dicts

    def convert(item: ContextItem) -> StmMessage | ContextItem:
        if not dicts:
            return item
        body = fmt.message(item)
        if keep_tags:
            body["tag"] = item.tag
        return StmMessage(body, item)

    inserts: dict[int, list[StmMessage | ContextItem]] = {}
    if ctx.memory_items:
        depth = ctx.memory_injection_depth
        kept = (kept_block_index(messages, previous, ctx.memory_items, fmt)
                if previous is not None and ctx.cache_policy == "stable" else None)
        if kept is not None:
            at = kept
        elif depth >= 0:
            at = insertion_index(messages, depth, fmt, is_dialogue=is_dialogue)
        else:
            at = anchored_index(messages, fmt) if anchor_index is None else anchor_index
            at = keep_tool_calls_together(messages, max(0, min(at, len(messages))), fmt)
        inserts.setdefault(at, []).extend(convert(i) for i in ctx.memory_items)
    if ctx.nudge_item is not None:
        at = insertion_index(messages, ctx.nudge_injection_depth, fmt, is_dialogue=is_dialogue)
        inserts.setdefault(at, []).append(convert(ctx.nudge_item))

    out: list[Any] = []
    for position, message in enumerate(messages):
        out.extend(inserts.get(position, ()))
        out.append(message)
    out.extend(inserts.get(len(messages), ()))
    return out


def check_arguments(messages: object, ctx: object, anchor_index: object,
                    previous: object = None) -> None:
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise ValidationError(f"messages must be a list of messages, not "
                              f"{type(messages).__name__}", field="messages",
                              allowed="a list or tuple")
    if not isinstance(ctx, StmContext):
        raise ValidationError(f"ctx must be the StmContext build_context returned, not "
                              f"{type(ctx).__name__}", field="ctx", allowed="StmContext")
    if anchor_index is not None and (isinstance(anchor_index, bool)
                                     or not isinstance(anchor_index, int)):
        raise ValidationError(f"anchor_index must be an int or None, not {anchor_index!r}",
                              field="anchor_index", allowed="an int or None")
    if previous is not None and (not isinstance(previous, Sequence)
                                 or isinstance(previous, str | bytes | bytearray)):
        raise ValidationError(f"previous must be the message list inject returned on the "
                              f"previous turn, not {type(previous).__name__}",
                              field="previous", allowed="a list of messages or None")


def _wants_dicts(messages: Sequence[object]) -> bool:
    if not messages:
        return True
    return any(isinstance(m, Mapping) for m in messages)


__all__ = [
    "DIALOGUE_ROLES",
    "MESSAGE_FORMATS",
    "MessageFormat",
    "MessageFormatKey",
    "StmMessage",
    "anchored_index",
    "as_message",
    "dialogue_insertion_index",
    "find_injected",
    "inject",
    "injected_item",
    "insert_at_dialogue_depth",
    "is_dialogue_turn",
    "keep_tool_calls_together",
    "kept_block_index",
    "message_format",
    "splits_tool_call",
    "strip_injected",
]


class _CallablePackage(ModuleType):
    """This package, still callable for a deprecation period.

    In stm 0.1 the name ``stm_core.inject`` was the :func:`inject` function,
    which hid this package. It is the package now; calling it warns and
    forwards to the function, until stm 1.0 (docs/hook-policy.md).
    """

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        warnings.warn("calling the stm_core.inject package is deprecated and stops working "
                      "in stm 1.0; call the function: from stm_core.inject import inject",
                      DeprecationWarning, stacklevel=2)
        return inject(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
