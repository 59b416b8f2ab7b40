"""The bundled demo transcript: its shape, loading and validation.

A transcript names its people, personas, servers and channels by short keys
(``"mira"``, ``"campaign"``) and lists the turns in order. Loading checks every
key and every cross-reference, so a broken transcript fails with a message
that says where, before anything is replayed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from stm_core.errors import ValidationError

BUNDLED_PATH = Path(__file__).resolve().parent / "data" / "transcript.json"
FORMAT = 1


@attrs.frozen(kw_only=True)
class User:
    key: str
    id: str
    name: str


@attrs.frozen(kw_only=True)
class Persona:
    key: str
    id: str
    lineage: str
    name: str
    provider: str
    #: The provider's model (``Turn.model``): gates, phrasing and the tool
    #: format may look at it.
    model: str | None
    has_tools: bool
    role: str


@attrs.frozen(kw_only=True)
class Category:
    label: str
    description: str


@attrs.frozen(kw_only=True)
class Server:
    key: str
    id: str
    name: str
    #: Empty: the server stays in summary mode.
    categories: tuple[Category, ...]
    #: Channel keys.
    private_channels: tuple[str, ...]
    render_mode: str | None


@attrs.frozen(kw_only=True)
class Channel:
    key: str
    id: str
    name: str
    #: Server key; ``None`` for a direct-message conversation.
    server: str | None
    #: Channel key of the parent when this channel is a thread.
    parent: str | None = None


@attrs.frozen(kw_only=True)
class Line:
    """One incoming message of a turn."""

    user: str
    text: str


@attrs.frozen(kw_only=True)
class ScriptedTurn:
    after_minutes: float
    channel: str
    persona: str
    #: What people said since the bot last spoke here; the last one triggers the turn.
    messages: tuple[Line, ...]
    reply: str
    #: What the model would write to its memory after this turn (slug or
    #: ``summary`` -> text); the scripted model uses the latest notes it has.
    notes: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Transcript:
    title: str
    description: str
    start_ms: int
    #: Messages of a channel the host shows the model (and records) per turn.
    history_window: int
    users: Mapping[str, User]
    personas: Mapping[str, Persona]
    servers: Mapping[str, Server]
    channels: Mapping[str, Channel]
    crossserver_opt_in: tuple[str, ...]
    turns: tuple[ScriptedTurn, ...]

    def is_private(self, channel: Channel) -> bool:
        """A private channel, or a thread whose parent is private."""
        if channel.server is None:
            return False
        private = self.servers[channel.server].private_channels
        return channel.key in private or (channel.parent is not None
                                          and channel.parent in private)


# -- parsing -----------------------------------------------------------------------
_MISSING: Any = object()
_KIND_NAMES = {str: "a string", int: "a whole number", float: "a number",
               bool: "true or false", dict: "an object", list: "a list",
               type(None): "null"}


def _error(path: str, problem: str) -> ValidationError:
    return ValidationError(f"demo transcript: {path} {problem}", field=path)


class _Reader:
    """Typed access to one JSON object; errors name the path of the bad value."""

    def __init__(self, data: object, path: str, allowed: set[str]) -> None:
        if not isinstance(data, dict):
            raise _error(path, "must be an object")
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise _error(path, f"has unknown key(s) {', '.join(unknown)}; allowed: "
                               + ", ".join(sorted(allowed)))
        self.data: dict[str, Any] = data
        self.path = path

    def value(self, key: str, kinds: tuple[type, ...], default: Any = _MISSING) -> Any:
        if key not in self.data:
            if default is _MISSING:
                raise _error(f"{self.path}.{key}", "is required")
            return default
        value = self.data[key]
        # bool is an int to Python, never to a transcript author.
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(dict.fromkeys(_KIND_NAMES[k] for k in kinds))
            raise _error(f"{self.path}.{key}", f"must be {names}")
        return value

    def text(self, key: str) -> str:
        value = str(self.value(key, (str,)))
        if not value.strip():
            raise _error(f"{self.path}.{key}", "must not be empty")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.value(key, (str, type(None)), None)
        return None if value is None else str(value)

    def number(self, key: str) -> float:
        value = float(self.value(key, (int, float)))
        if value < 0:
            raise _error(f"{self.path}.{key}", "must be 0 or more")
        return value

    def flag(self, key: str) -> bool:
        return bool(self.value(key, (bool,)))

    def table(self, key: str) -> dict[str, Any]:
        return dict(self.value(key, (dict,)))

    def items(self, key: str, default: Any = _MISSING) -> list[Any]:
        return list(self.value(key, (list,), default))


def _users(raw: dict[str, Any]) -> dict[str, User]:
    users = {}
    for key, value in raw.items():
        r = _Reader(value, f"users.{key}", {"id", "name"})
        users[key] = User(key=key, id=r.text("id"), name=r.text("name"))
    return users


def _personas(raw: dict[str, Any]) -> dict[str, Persona]:
    personas = {}
    for key, value in raw.items():
        r = _Reader(value, f"personas.{key}",
                    {"id", "lineage", "name", "provider", "model", "has_tools", "role"})
        personas[key] = Persona(key=key, id=r.text("id"), lineage=r.text("lineage"),
                                name=r.text("name"), provider=r.text("provider"),
                                model=r.optional_text("model"),
                                has_tools=r.flag("has_tools"), role=r.text("role"))
    return personas


def _servers(raw: dict[str, Any]) -> dict[str, Server]:
    servers = {}
    for key, value in raw.items():
        r = _Reader(value, f"servers.{key}",
                    {"id", "name", "categories", "private_channels", "render_mode"})
        categories = []
        for i, item in enumerate(r.items("categories", [])):
            c = _Reader(item, f"servers.{key}.categories[{i}]", {"label", "description"})
            categories.append(Category(label=c.text("label"),
                                       description=c.text("description")))
        private = r.items("private_channels", [])
        if not all(isinstance(p, str) for p in private):
            raise _error(f"servers.{key}.private_channels", "must list channel keys")
        servers[key] = Server(key=key, id=r.text("id"), name=r.text("name"),
                              categories=tuple(categories), private_channels=tuple(private),
                              render_mode=r.optional_text("render_mode"))
    return servers


def _channels(raw: dict[str, Any]) -> dict[str, Channel]:
    channels = {}
    for key, value in raw.items():
        r = _Reader(value, f"channels.{key}", {"id", "name", "server", "parent"})
        channels[key] = Channel(key=key, id=r.text("id"), name=r.text("name"),
                                server=r.optional_text("server"),
                                parent=r.optional_text("parent"))
    return channels


def _turns(raw: list[Any]) -> list[ScriptedTurn]:
    turns = []
    for i, value in enumerate(raw):
        path = f"turns[{i}]"
        r = _Reader(value, path,
                    {"after_minutes", "channel", "persona", "messages", "reply", "notes"})
        lines = []
        for j, item in enumerate(r.items("messages")):
            m = _Reader(item, f"{path}.messages[{j}]", {"user", "text"})
            lines.append(Line(user=m.text("user"), text=m.text("text")))
        if not lines:
            raise _error(f"{path}.messages", "must hold at least one message")
        notes = r.value("notes", (dict,), {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in notes.items()):
            raise _error(f"{path}.notes", "must map field names to strings")
        turns.append(ScriptedTurn(after_minutes=r.number("after_minutes"),
                                  channel=r.text("channel"), persona=r.text("persona"),
                                  messages=tuple(lines), reply=r.text("reply"),
                                  notes=dict(notes)))
    return turns


def _check_unique_ids(kind: str, ids: Mapping[str, str]) -> None:
    seen: dict[str, str] = {}
    for key, ident in ids.items():
        if ident in seen:
            raise _error(f"{kind}.{key}.id", f"repeats the id of {kind}.{seen[ident]}")
        seen[ident] = key


def _check_references(t: Transcript) -> None:
    _check_unique_ids("users", {k: u.id for k, u in t.users.items()})
    _check_unique_ids("personas", {k: p.id for k, p in t.personas.items()})
    _check_unique_ids("servers", {k: s.id for k, s in t.servers.items()})
    _check_unique_ids("channels", {k: c.id for k, c in t.channels.items()})
    for key, channel in t.channels.items():
        if channel.server is not None and channel.server not in t.servers:
            raise _error(f"channels.{key}.server", f"names an unknown server {channel.server!r}")
        if channel.parent is not None:
            parent = t.channels.get(channel.parent)
            if parent is None or parent.server is None or parent.server != channel.server:
                raise _error(f"channels.{key}.parent", "must name a channel of the same server")
    for key, server in t.servers.items():
        for name in server.private_channels:
            private = t.channels.get(name)
            if private is None or private.server != key:
                raise _error(f"servers.{key}.private_channels",
                             f"names {name!r}, which is not a channel of this server")
    for name in t.crossserver_opt_in:
        if name not in t.users:
            raise _error("crossserver_opt_in", f"names an unknown user {name!r}")
    for i, turn in enumerate(t.turns):
        if turn.channel not in t.channels:
            raise _error(f"turns[{i}].channel", f"names an unknown channel {turn.channel!r}")
        if turn.persona not in t.personas:
            raise _error(f"turns[{i}].persona", f"names an unknown persona {turn.persona!r}")
        for j, line in enumerate(turn.messages):
            if line.user not in t.users:
                raise _error(f"turns[{i}].messages[{j}].user",
                             f"names an unknown user {line.user!r}")


def parse_transcript(data: object) -> Transcript:
    """Build a :class:`Transcript` from decoded JSON; raises ``ValidationError``."""
    r = _Reader(data, "transcript",
                {"format", "title", "description", "start", "history_window", "users",
                 "personas", "servers", "channels", "crossserver_opt_in", "turns"})
    version = r.value("format", (int,))
    if version != FORMAT:
        raise _error("transcript.format", f"is {version}; this version reads {FORMAT}")
    try:
        start = datetime.fromisoformat(r.text("start"))
    except ValueError:
        raise _error("transcript.start", "must be an ISO 8601 time with an offset") from None
    if start.tzinfo is None:
        raise _error("transcript.start", "must carry a UTC offset")
    window = int(r.value("history_window", (int,), 8))
    if window < 1:
        raise _error("transcript.history_window", "must be at least 1")
    opt_in = r.items("crossserver_opt_in", [])
    if not all(isinstance(u, str) for u in opt_in):
        raise _error("transcript.crossserver_opt_in", "must list user keys")
    turns = _turns(r.items("turns"))
    if not turns:
        raise _error("transcript.turns", "must hold at least one turn")
    transcript = Transcript(
        title=r.text("title"), description=r.text("description"),
        start_ms=int(start.timestamp() * 1000), history_window=window,
        users=_users(r.table("users")), personas=_personas(r.table("personas")),
        servers=_servers(r.table("servers")), channels=_channels(r.table("channels")),
        crossserver_opt_in=tuple(str(u) for u in opt_in), turns=tuple(turns))
    _check_references(transcript)
    return transcript


def load_transcript(path: Path | None = None) -> Transcript:
    """The bundled transcript, or the one at ``path``."""
    # Next to this package rather than importlib.resources: the latter fails
    # on Python 3.11 when an editable install presents stm_core as a namespace.
    source = path or BUNDLED_PATH
    raw = source.read_text("utf-8")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"demo transcript {source} is not valid JSON: {exc}",
                              field="transcript") from None
    return parse_transcript(data)
