"""What a demo replay produces: one record per turn and a summary.

Plain frozen values, so the renderer, the ``--json`` output and the tests all
read the same thing. :meth:`DemoResult.to_json` is the machine-readable
document ``stm demo --json`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

InjectedKind = str  # "other_channels" | "same_channel" | "nudge"


@attrs.frozen(kw_only=True)
class Where:
    """A channel as the demo shows it."""

    channel_id: str
    channel_name: str
    #: ``None`` in a DM.
    server_id: str | None
    server_name: str | None
    #: ``"public"``, ``"private"``, ``"thread"`` (of a private channel), ``"dm"``.
    visibility: str

    @property
    def label(self) -> str:
        if self.server_name is None:
            return self.channel_name
        return f"#{self.channel_name} · {self.server_name}"


@attrs.frozen(kw_only=True)
class SpokenLine:
    speaker: str
    text: str


@attrs.frozen(kw_only=True)
class InjectedItem:
    kind: InjectedKind
    text: str
    #: Index in the final message list (``None`` if the host could not place it).
    index: int | None


@attrs.frozen(kw_only=True)
class PromptMessage:
    """One message of the final list sent to the model."""

    role: str
    content: str
    #: The kind of stm item this is, or ``None`` for the host's own messages.
    injected: InjectedKind | None = None


@attrs.frozen(kw_only=True)
class ToolCall:
    arguments: Mapping[str, str]
    ok: bool
    message: str
    code: str | None = None
    written: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class TurnRecord:
    """Everything that happened in one bot turn."""

    #: 1-based position in the replay.
    number: int
    #: Minutes since the replay started (the demo clock).
    minute: float
    time: str
    where: Where
    persona_id: str
    persona_name: str
    persona_lineage_id: str
    provider: str
    triggered_by: str
    incoming: tuple[SpokenLine, ...]
    #: How many times this persona has spoken in this channel, this turn included.
    bot_turn_in_channel: int
    memory_items: tuple[InjectedItem, ...]
    nudge: InjectedItem | None
    nudge_injection_depth: int
    memory_injection_depth: int
    messages: tuple[PromptMessage, ...]
    tool_offered: bool
    #: Argument names of the offered tool (slugs, or ``summary``).
    tool_properties: tuple[str, ...]
    #: The declaration ``tool_schema`` returned, in the provider's format.
    tool_schema: Mapping[str, Any] | None
    tool_call: ToolCall | None
    reply: str
    counter_before: int
    counter_after: int | None
    #: Tokens of everything stm added (``stm_token_counter``) and the budget
    #: it was held to (0: none).
    memory_tokens: int = 0
    budget_tokens: int = 0


@attrs.frozen(kw_only=True)
class Leak:
    """Content seen where it must not be (the demo expects none)."""

    turn: int
    channel: str
    origin_channel: str
    text: str


@attrs.frozen(kw_only=True)
class DemoSummary:
    database: str
    turns: int
    channels: int
    servers: int
    #: Direct-message conversations.
    dms: int
    personas: int
    nudges: int
    tool_calls: int
    tool_calls_ok: int
    #: Fields written by successful tool calls (slugs or ``summary``).
    memory_fields_written: int
    #: Channel turns whose context held memory items.
    turns_with_memory: int
    private_lines: int
    dm_lines: int
    leaks: tuple[Leak, ...]
    novelai_turns: int
    novelai_turns_with_memory: int
    novelai_turns_with_tool_or_nudge: int
    #: Cache policy -> turn-over-turn prompt reuse (``ReuseFigures.to_dict()``).
    prefix_reuse: Mapping[str, Mapping[str, float | int]] = attrs.field(factory=dict)
    #: The closing scene: a bad model rewrite undone (``UndoScene`` fields).
    undo: Mapping[str, str | int] | None = None


@attrs.frozen(kw_only=True)
class DemoResult:
    title: str
    turns: tuple[TurnRecord, ...]
    summary: DemoSummary

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document: ``{"title", "turns": [...], "summary": {...}}``."""
        doc: dict[str, Any] = _plain(attrs.asdict(self))
        return doc


def _plain(value: Any) -> Any:
    """JSON's own types only: tuples become lists, mappings plain dicts."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
