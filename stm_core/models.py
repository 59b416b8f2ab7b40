"""Values that cross the public API: the turn a host describes, what stm returns.

Every class is a frozen, keyword-only attrs class. Ids are strings (Discord
snowflakes or anything else); an ``int`` id is turned into its string when the
value is built, so ``Turn(channel_id=1001)`` and ``Turn(channel_id="1001")``
are the same channel on every backend. A turn whose ``server_id`` is ``None``
is a DM. A field of the wrong type raises :class:`~stm_core.errors.ValidationError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol, cast

import attrs

from stm_core._util import arguments
from stm_core._util.fast_attrs import unchecked_maker
from stm_core.errors import ValidationError
from stm_core.name_maps import IdSet, NameMap

#: Tag carried by every item stm emits (memory blocks and the nudge).
STM_TAG = "KNOWLEDGE_SHORT_TERM_MEMORY"
#: Tag of live dialogue turns; only these are counted by :func:`stm_core.inject`.
DIALOGUE_HISTORY = "DIALOGUE_HISTORY"
#: Tag of example dialogues; never counted.
DIALOGUE_SAMPLE = "DIALOGUE_SAMPLE"

ItemKind = Literal["other_channels", "same_channel", "nudge"]
RenderModeKey = str
AuthorType = Literal["user", "persona", "other"]
AUTHOR_TYPES: tuple[str, ...] = ("user", "persona", "other")


# Field checks (stm_core._util.arguments): a wrong type is a ValidationError when the
# value is built, and int ids become strings here, the same for every backend.
# Named converters (not closures) so type checkers see ``str | int`` ids.
IdIn = str | int
NamesIn = Mapping[str, str] | Mapping[int, str] | None


def _user_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "user_id")


def _channel_id(value: IdIn) -> str:
    return arguments.to_id(value, "channel_id")


def _server_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "server_id")


def _parent_channel_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "parent_channel_id")


def _persona_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "persona_id")


def _persona_lineage_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "persona_lineage_id")


def _author_id(value: IdIn | None) -> str | None:
    return arguments.to_optional_id(value, "author_id")


# A NameMap or IdSet was checked when it was built: kept as is, not copied.

def _user_names(value: NamesIn) -> Mapping[str, str]:
    return value if type(value) is NameMap else arguments.name_map(value, "user_names")


def _channel_names(value: NamesIn) -> Mapping[str, str]:
    return value if type(value) is NameMap else arguments.name_map(value, "channel_names")


def _role_names(value: NamesIn) -> Mapping[str, str]:
    return value if type(value) is NameMap else arguments.name_map(value, "role_names")


def _thread_ids(value: Iterable[IdIn]) -> frozenset[str]:
    return value if type(value) is IdSet else arguments.id_set(value, "thread_ids")


_text = arguments.validator(arguments.check_text)
_optional_text = arguments.validator(arguments.check_optional_text)
_flag = arguments.validator(arguments.check_flag)


def _author_type(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in AUTHOR_TYPES:
        raise ValidationError(f"author_type must be one of {', '.join(AUTHOR_TYPES)}, got "
                              f"{value!r}", field="author_type", allowed=", ".join(AUTHOR_TYPES))


@attrs.frozen(kw_only=True, eq=False)
class Turn:
    """Everything stm needs to know about one chat turn.

    The host builds one ``Turn`` per turn and passes the *same object* to
    ``build_context``, ``apply_tool_call`` and ``record_turn``: the
    once-per-turn tool rule is tracked per object.
    """

    #: The triggering user (the impersonated user on an impersonation turn).
    #: ``None`` means nobody triggered the turn: build_context returns defaults.
    user_id: str | None = attrs.field(converter=_user_id)
    channel_id: str = attrs.field(converter=_channel_id)
    #: ``None`` for a direct-message conversation.
    server_id: str | None = attrs.field(default=None, converter=_server_id)
    #: The parent channel when ``channel_id`` is a thread (private inheritance).
    parent_channel_id: str | None = attrs.field(default=None, converter=_parent_channel_id)
    persona_id: str | None = attrs.field(default=None, converter=_persona_id)
    persona_lineage_id: str | None = attrs.field(default=None, converter=_persona_lineage_id)
    #: The bot's (persona's) display name, ``{bot}`` in texts.
    bot_name: str = attrs.field(default="Assistant", validator=_text)
    #: The triggering user's display name, ``{user}`` in texts.
    triggerer_name: str = attrs.field(default="User", validator=_text)
    #: LLM provider key, e.g. ``"openai"``, ``"anthropic"``, ``"novelai"``.
    provider: str = attrs.field(default="", validator=_text)
    #: The model of that provider, e.g. ``"gpt-4o"`` or ``"anthropic/claude-3-5-sonnet"``
    #: behind a gateway. Gates, phrasing and the tool-format rule may look at it.
    model: str | None = attrs.field(default=None, validator=_optional_text)
    has_tools: bool = attrs.field(default=True, validator=_flag)
    personal_memories_enabled: bool = attrs.field(default=True, validator=_flag)
    is_user_impersonation: bool = attrs.field(default=False, validator=_flag)
    #: The user asks for a long-term action: the STM tool and nudge stand back.
    explicit_long_term_intent: bool = attrs.field(default=False, validator=_flag)
    #: Set when the tool must not be offered this turn (e.g. hidden image turns).
    stm_update_disabled: bool = attrs.field(default=False, validator=_flag)
    server_name: str | None = attrs.field(default=None, validator=_optional_text)
    channel_name: str | None = attrs.field(default=None, validator=_optional_text)
    #: Names used by mention conversion: user id, channel id, role id -> name.
    user_names: Mapping[str, str] = attrs.field(factory=dict, converter=_user_names)
    channel_names: Mapping[str, str] = attrs.field(factory=dict, converter=_channel_names)
    role_names: Mapping[str, str] = attrs.field(factory=dict, converter=_role_names)
    #: Channel ids that are threads (rendered without ``#``).
    thread_ids: frozenset[str] = attrs.field(factory=frozenset, converter=_thread_ids)

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

    author_type: AuthorType = attrs.field(validator=_author_type)
    content: str = attrs.field(validator=_text)
    speaker_name: str | None = attrs.field(default=None, validator=_optional_text)
    #: The author's user id (or the persona's id). Stored with the line, so a
    #: user's lines can be found, exported and forgotten; ``None`` when unknown.
    #: An ``int`` id becomes its decimal string, as in a :class:`Turn`.
    author_id: str | None = attrs.field(default=None, converter=_author_id)
    #: This is the message that triggered the turn. A user line marked so and
    #: passed without ``author_id`` is stored with the turn's ``user_id`` (not
    #: on an impersonation turn); stm attributes no other line. At most one
    #: line of a window may be marked.
    is_trigger: bool = attrs.field(default=False, validator=_flag)


@attrs.frozen(kw_only=True)
class PersonaResponse:
    """One reply a persona produced this turn."""

    content: str = attrs.field(validator=_text)
    persona_name: str = attrs.field(validator=_text)
    persona_id: str | None = attrs.field(default=None, converter=_persona_id)
    persona_lineage_id: str | None = attrs.field(default=None, converter=_persona_lineage_id)


@attrs.frozen(kw_only=True)
class CrudeMessage:
    """A stored raw line of a channel (the last N are kept per channel)."""

    role: Literal["user", "model"]
    content: str
    speaker_name: str | None
    timestamp_ms: int
    #: The :attr:`HistoryMessage.author_id` of the line; ``None`` for lines
    #: stored without one (including every line stored before authors were kept).
    author_id: str | None = None


class _LineMaker(Protocol):
    def __call__(self, role: Literal["user", "model"], content: str,
                 speaker_name: str | None, timestamp_ms: int,
                 author_id: str | None = None) -> CrudeMessage: ...


#: ``CrudeMessage(...)`` with the fields by position too, without the keyword
#: ``__init__`` attrs generates: the same object, each slot set through its
#: descriptor (:mod:`stm_core._util.fast_attrs`), faster: every turn stores ten
#: lines, and loading a row decodes them.
crude_line = cast(_LineMaker, unchecked_maker(CrudeMessage, positional=True))


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
