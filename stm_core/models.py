"""Values that cross the public API: the turn a host describes, what stm returns.

Every class is a frozen, keyword-only attrs class. Ids are strings (Discord
snowflakes or anything else); a turn whose ``server_id`` is ``None`` is a DM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import attrs


def _to_frozenset(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


#: Tag carried by every item stm emits (memory blocks and the nudge).
STM_TAG = "KNOWLEDGE_SHORT_TERM_MEMORY"
#: Tag of live dialogue turns; only these are counted by :func:`stm_core.inject`.
DIALOGUE_HISTORY = "DIALOGUE_HISTORY"
#: Tag of example dialogues; never counted.
DIALOGUE_SAMPLE = "DIALOGUE_SAMPLE"

ItemKind = Literal["other_channels", "same_channel", "nudge"]
RenderModeKey = str
AuthorType = Literal["user", "persona", "other"]


def _frozen_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(value or {})


@attrs.frozen(kw_only=True, eq=False)
class Turn:
    """Everything stm needs to know about one chat turn.

    The host builds one ``Turn`` per turn and passes the *same object* to
    ``build_context``, ``apply_tool_call`` and ``record_turn``: the
    once-per-turn tool rule is tracked per object.
    """

    #: The triggering user (the impersonated user on an impersonation turn).
    #: ``None`` means nobody triggered the turn: build_context returns defaults.
    user_id: str | None
    channel_id: str
    #: ``None`` for a direct-message conversation.
    server_id: str | None = None
    #: The parent channel when ``channel_id`` is a thread (private inheritance).
    parent_channel_id: str | None = None
    persona_id: str | None = None
    persona_lineage_id: str | None = None
    #: The bot's (persona's) display name, ``{bot}`` in texts.
    bot_name: str = "Assistant"
    #: The triggering user's display name, ``{user}`` in texts.
    triggerer_name: str = "User"
    #: LLM provider key, e.g. ``"openai"``, ``"anthropic"``, ``"novelai"``.
    provider: str = ""
    has_tools: bool = True
    personal_memories_enabled: bool = True
    is_user_impersonation: bool = False
    #: The user asks for a long-term action: the STM tool and nudge stand back.
    explicit_long_term_intent: bool = False
    #: Set when the tool must not be offered this turn (e.g. hidden image turns).
    stm_update_disabled: bool = False
    server_name: str | None = None
    channel_name: str | None = None
    #: Names used by mention conversion: user id, channel id, role id -> name.
    user_names: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    channel_names: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    role_names: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    #: Channel ids that are threads (rendered without ``#``).
    thread_ids: frozenset[str] = attrs.field(factory=frozenset, converter=_to_frozenset)

    @property
    def is_dm(self) -> bool:
        return self.server_id is None


@attrs.frozen(kw_only=True)
class ContextItem:
    """One chat item stm emits. ``role`` is always ``"user"``."""

    text: str
    kind: ItemKind
    role: str = "user"
    tag: str = STM_TAG


@attrs.frozen(kw_only=True)
class StmContext:
    """The result of ``build_context`` (the spec's Output section)."""

    memory_items: tuple[ContextItem, ...] = ()
    nudge_item: ContextItem | None = None
    nudge_injection_depth: int = 2
    #: ``-1`` keeps the block anchored (inline); ``>= 0`` is a dialogue depth.
    memory_injection_depth: int = -1
    #: The server's prompt-cache policy (``"freshness"`` or ``"stable"``). Under
    #: ``"stable"``, :func:`stm_core.inject.inject` given the previous prompt
    #: keeps an unchanged block where it was.
    cache_policy: str = "freshness"

    @classmethod
    def error_fallback(cls) -> StmContext:
        """What ``build_context`` returns when anything goes wrong."""
        return cls(memory_items=(), nudge_item=None, nudge_injection_depth=0,
                   memory_injection_depth=-1)


@attrs.frozen(kw_only=True)
class HistoryMessage:
    """A message of the history window the host used for this turn."""

    author_type: AuthorType
    content: str
    speaker_name: str | None = None


@attrs.frozen(kw_only=True)
class PersonaResponse:
    """One reply a persona produced this turn."""

    content: str
    persona_name: str
    persona_id: str | None = None
    persona_lineage_id: str | None = None


@attrs.frozen(kw_only=True)
class CrudeMessage:
    """A stored raw line of a channel (the last N are kept per channel)."""

    role: Literal["user", "model"]
    content: str
    speaker_name: str | None
    timestamp_ms: int


@attrs.frozen(kw_only=True)
class ToolResult:
    """What ``apply_tool_call`` returns; hand ``message`` to the model."""

    ok: bool
    message: str
    #: Machine-readable reason on failure, e.g. ``"empty_summary"``.
    code: str | None = None
    #: The values written (slug -> text, or ``{"summary": text}``).
    written: Mapping[str, str] = attrs.field(factory=dict)
    truncated: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class RecordResult:
    """What ``record_turn`` did."""

    recorded: bool
    skipped_reason: str | None = None
    #: Counter values after the increment, per persona id ("" when none).
    counters: Mapping[str, int] = attrs.field(factory=dict)
