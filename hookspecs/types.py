"""Objects that plugins return from hooks. Hooks are synchronous and cheap; any
async work lives in methods of these objects (the adapter's), never in a hook.

The hook contract owns these types: ``hookspecs`` imports nothing of stm_core
at run time (the names below ``TYPE_CHECKING`` are for type checkers only).
Plugin authors may also import them as ``stm_core.plugin_types``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

if TYPE_CHECKING:
    from stm_core.models import Turn
    from stm_core.settings import Settings
    from stm_core.storage.protocol import StorageAdapter
    from stm_core.storage.records import MemoryRecord, ServerSettings


def to_frozenset(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


@attrs.frozen(kw_only=True)
class StorageAdapterSpec:
    """A storage adapter a plugin offers.

    ``schemes`` are URL schemes it claims (the part before ``://``, e.g.
    ``"sqlite+aiosqlite"``). ``factory(url, settings)`` builds an adapter that is
    not yet set up; the store calls ``await adapter.setup()``.
    """

    name: str
    schemes: tuple[str, ...]
    factory: Callable[[str, Settings], StorageAdapter]
    description: str = ""


@attrs.frozen(kw_only=True)
class OtherChannelParts:
    """The pieces of one other-channel memory, ready to be assembled by a render mode.

    Headers end with a newline; ``crude_lines`` each end with a newline and are
    already capped to the server's ``crude_message_count``; ``body`` is the
    summary or the category lines (no trailing newline), or ``None``.
    """

    memory_header: str
    raw_header: str
    body: str | None
    crude_lines: tuple[str, ...]


@attrs.frozen(kw_only=True)
class RenderMode:
    """How other-channel memories are presented.

    ``render(parts)`` returns the text of one entry: zero or more blocks, each
    ending with ``]`` and a blank line (``"]\\n\\n"``); an empty string renders
    nothing for that entry.
    """

    key: str
    render: Callable[[OtherChannelParts], str]
    description: str = ""


@attrs.frozen(kw_only=True)
class ToolSchema:
    """The neutral form of the ``update_short_term_memory`` tool.

    ``properties`` maps each argument name to its description, in order; all are
    strings and all are listed as required.
    """

    name: str
    description: str
    properties: tuple[tuple[str, str], ...]
    mode: str  # "summary" or "category"

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.properties)

    def json_schema(self) -> dict[str, Any]:
        """The arguments as a JSON Schema object."""
        return {
            "type": "object",
            "properties": {n: {"type": "string", "description": d}
                           for n, d in self.properties},
            "required": list(self.required),
        }


@attrs.frozen(kw_only=True)
class ToolFormat:
    """A provider's tool-declaration format (``"openai"``, ``"anthropic"``, ...).

    ``providers`` lists provider keys that use it by default.
    """

    key: str
    render: Callable[[ToolSchema], dict[str, Any]]
    providers: frozenset[str] = attrs.field(factory=frozenset, converter=to_frozenset)


class TokenCounter(Protocol):
    """Counts the tokens of a text (the prompt budget's unit)."""

    def __call__(self, text: str) -> int: ...


#: The attribute :func:`byte_bounded` sets on a token counter.
BYTE_BOUNDED = "stm_at_most_one_token_per_byte"

CounterT = TypeVar("CounterT", bound=Callable[[str], int])


def byte_bounded(counter: CounterT) -> CounterT:
    """Mark a counter that never counts more tokens than its text has UTF-8
    bytes (true of byte-level BPE tokenizers and of the built-in estimate):
    the prompt budget then counts nothing when the length of a turn's texts
    alone proves they fit. Returns ``counter``."""
    setattr(counter, BYTE_BOUNDED, True)
    return counter


def is_byte_bounded(counter: Callable[[str], int]) -> bool:
    return getattr(counter, BYTE_BOUNDED, False) is True


class MentionConverter(Protocol):
    """Rewrites mentions and identity placeholders in one emitted text."""

    def __call__(self, text: str, turn: Turn) -> str: ...


@attrs.frozen(kw_only=True)
class VisibilityContext:
    """What a visibility policy may look at for one candidate memory."""

    turn: Turn
    #: Settings of the current server (``None`` in a DM).
    current: ServerSettings | None
    #: The current channel, or its parent thread channel, is private.
    current_is_private: bool
    crossserver_opt_in: bool
    #: Settings of every server an entry comes from, by server id.
    servers: Mapping[str, ServerSettings]


class VisibilityPolicy(Protocol):
    """Decides whether an other-channel memory may appear in this turn.

    Return ``False`` to hide it (any ``False`` wins), ``True`` or ``None`` to
    let it through. A policy that hides whole channels may say which
    (:func:`hides_channels`).
    """

    def __call__(self, entry: MemoryRecord, ctx: VisibilityContext) -> bool | None: ...


#: The attribute :func:`hides_channels` sets on a visibility policy.
HIDDEN_CHANNELS = "stm_hidden_channels"

PolicyT = TypeVar("PolicyT", bound="Callable[[MemoryRecord, VisibilityContext], bool | None]")


def hides_channels(channels: Callable[[VisibilityContext], frozenset[str]]
                   ) -> Callable[[PolicyT], PolicyT]:
    """Declare, on a visibility policy, the channels of the turn's own server
    it hides wholesale: for every entry of that server whose channel, or the
    channel its thread hangs under, is in ``channels(ctx)``, the policy
    answers ``False``. A build in a big server then passes those entries by
    without calling the policy for each. The policy must still answer
    ``False`` for them when called. Returns a decorator that marks the
    policy and returns it."""
    def mark(policy: PolicyT) -> PolicyT:
        setattr(policy, HIDDEN_CHANNELS, channels)
        return policy
    return mark


def hidden_channels(policies: Iterable[VisibilityPolicy], ctx: VisibilityContext
                    ) -> frozenset[str]:
    """The channels of the turn's server that ``policies`` declared hidden in ``ctx``."""
    hidden: frozenset[str] = frozenset()
    for policy in policies:
        channels = getattr(policy, HIDDEN_CHANNELS, None)
        if channels is not None:
            declared = channels(ctx)
            hidden = declared if not hidden else hidden | declared
    return hidden


@attrs.frozen(kw_only=True)
class Actor:
    """Who is calling an admin method, as the host states it.

    ``can_manage`` is the host's answer to "may this person manage the place
    the action concerns?" (on Discord: the Manage Server permission in that
    guild). stm never looks permissions up itself.
    """

    user_id: str
    can_manage: bool = False


@attrs.frozen(kw_only=True)
class AdminAction:
    """One admin call a permission policy decides on.

    ``scope`` says whose data it touches: ``"server"`` (a server's settings or
    its shared memory; ``server_id`` set), ``"channel"`` (every row of a
    channel) or ``"user"`` (one user's own data: preferences, their own rows,
    a direct-message memory; ``user_id`` set).
    """

    name: str
    writes: bool
    scope: str
    server_id: str | None = None
    channel_id: str | None = None
    user_id: str | None = None


__all__ = [
    "BYTE_BOUNDED",
    "HIDDEN_CHANNELS",
    "Actor",
    "AdminAction",
    "MentionConverter",
    "OtherChannelParts",
    "RenderMode",
    "StorageAdapterSpec",
    "TokenCounter",
    "ToolFormat",
    "ToolSchema",
    "VisibilityContext",
    "VisibilityPolicy",
    "byte_bounded",
    "hidden_channels",
    "hides_channels",
    "is_byte_bounded",
]
