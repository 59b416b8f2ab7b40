"""A small fake of Discord on 127.0.0.1, for the real discord.py client.

It serves the REST routes the kit's bot calls and a gateway websocket (HELLO,
READY, GUILD_CREATE, then whatever the test dispatches: MESSAGE_CREATE and
INTERACTION_CREATE for slash commands, modal submits and component clicks),
and records everything the bot sends back.

discord.py has no public setting for the REST base or the gateway URL:
:meth:`FakeDiscord.point_discord_py_here` sets the two class attributes that
hold them (``discord.http.Route.BASE`` and
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY``). Nothing else of the
client is changed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from aiohttp import WSMsgType, web

#: Discord's permission bit for Manage Server.
MANAGE_GUILD = 1 << 5
#: Every permission bit a member without Manage Server gets here.
MEMBER_PERMISSIONS = (1 << 10) | (1 << 11)  # view channel, send messages
ADMIN_PERMISSIONS = MEMBER_PERMISSIONS | MANAGE_GUILD
EPHEMERAL = 1 << 6
TIMESTAMP = "2026-01-01T00:00:00.000000+00:00"

Json = dict[str, Any]


@attrs.frozen(kw_only=True)
class User:
    id: int
    name: str
    permissions: int = MEMBER_PERMISSIONS
    bot: bool = False

    def payload(self) -> Json:
        return {"id": str(self.id), "username": self.name, "global_name": self.name,
                "discriminator": "0", "avatar": None, "bot": self.bot}

    def member(self) -> Json:
        return {"user": self.payload(), "roles": [], "joined_at": TIMESTAMP, "nick": None,
                "deaf": False, "mute": False, "flags": 0,
                "permissions": str(self.permissions)}


@attrs.frozen(kw_only=True)
class Channel:
    id: int
    name: str
    #: The parent channel of a thread.
    parent_id: int | None = None

    def payload(self, guild_id: int) -> Json:
        if self.parent_id is None:
            return {"id": str(self.id), "type": 0, "name": self.name, "position": 0,
                    "guild_id": str(guild_id), "permission_overwrites": [], "nsfw": False}
        return {"id": str(self.id), "type": 11, "name": self.name, "guild_id": str(guild_id),
                "parent_id": str(self.parent_id), "owner_id": "1", "member_count": 1,
                "message_count": 0,
                "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                    "archive_timestamp": TIMESTAMP, "locked": False}}


@attrs.frozen(kw_only=True)
class Guild:
    id: int
    name: str
    channels: tuple[Channel, ...]
    members: tuple[User, ...]

    def payload(self) -> Json:
        return {"id": str(self.id), "name": self.name, "owner_id": str(self.members[0].id),
                "unavailable": False, "member_count": len(self.members), "large": False,
                "features": [], "emojis": [], "stickers": [], "voice_states": [],
                "presences": [], "premium_tier": 0, "verification_level": 0,
                "default_message_notifications": 0, "explicit_content_filter": 0,
                "mfa_level": 0, "nsfw_level": 0, "preferred_locale": "en-US",
                "roles": [{"id": str(self.id), "name": "@everyone", "permissions": "0",
                           "position": 0, "color": 0, "hoist": False, "managed": False,
                           "mentionable": False, "flags": 0}],
                "channels": [c.payload(self.id) for c in self.channels if c.parent_id is None],
                "threads": [c.payload(self.id) for c in self.channels
                            if c.parent_id is not None],
                "members": [m.member() for m in self.members]}

    def channel(self, channel_id: int) -> Channel:
        return next(c for c in self.channels if c.id == channel_id)


@attrs.define
class Sent:
    """One thing the bot sent: a message, an interaction callback, a followup."""

    kind: str  # "message", "callback", "followup", "edit"
    channel_id: int | None
    body: Json
    #: The message the fake made of it (callbacks that create one, messages).
    message: Json | None = None

    @property
    def content(self) -> str:
        data = self.body.get("data", self.body) if self.kind == "callback" else self.body
        return str((data or {}).get("content") or "")

    @property
    def embeds_text(self) -> str:
        data = self.body.get("data", self.body) if self.kind == "callback" else self.body
        parts = []
        for embed in (data or {}).get("embeds") or []:
            parts += [embed.get("title") or "", embed.get("description") or ""]
            parts += [f"{f['name']}: {f['value']}" for f in embed.get("fields") or []]
        return "\n".join(p for p in parts if p)

    @property
    def text(self) -> str:
        return "\n".join(p for p in (self.content, self.embeds_text) if p)

    @property
    def ephemeral(self) -> bool:
        data = self.body.get("data", self.body) if self.kind == "callback" else self.body
        return bool(int((data or {}).get("flags") or 0) & EPHEMERAL)

    @property
    def modal(self) -> Json | None:
        return self.body.get("data") if self.kind == "callback" and self.body.get(
            "type") == 9 else None


class FakeDiscord:
    """The fake: REST and gateway on one loopback port.

    ``async with FakeDiscord(guilds, bot=...) as fake:`` starts it; a test then
    calls :meth:`say` (a user's message), :meth:`slash` (a slash command),
    :meth:`submit_modal` and :meth:`click`, and reads :attr:`sent`.
    """

    def __init__(self, guilds: Iterable[Guild], *, bot: User,
                 application_id: int = 900) -> None:
        self.guilds = tuple(guilds)
        self.bot = bot
        self.application_id = application_id
        self.sent: list[Sent] = []
        #: Commands the bot registered (``tree.sync()``).
        self.commands: list[Json] = []
        #: Channel id -> its messages, oldest first (what the history route reads).
        self.history: dict[int, list[Json]] = {}
        #: Status codes the next message sends fail with, one each.
        self.fail_sends: list[int] = []
        #: Status codes the next history reads fail with, one each.
        self.fail_reads: list[int] = []
        self._ids = itertools.count(10_000)
        #: Interactions sent to the bot: id -> channel, and token -> id.
        self._pending: dict[str, int] = {}
        self._token_interactions: dict[str, str] = {}
        #: Component interactions: id -> the message clicked on.
        self._clicked: dict[str, str] = {}
        self._sockets: list[web.WebSocketResponse] = []
        self._compress: dict[web.WebSocketResponse, Callable[[bytes], bytes]] = {}
        self._seq = itertools.count(1)
        self._ready = asyncio.Event()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- running ------------------------------------------------------------------
    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def rest_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def point_discord_py_here(self) -> None:
        """discord.py reads these two class attributes and has no setting for them."""
        import discord.gateway
        import discord.http
        import yarl

        discord.http.Route.BASE = self.rest_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)

    async def wait_ready(self, timeout: float = 10) -> None:
        """Until a client has identified and been sent its guilds."""
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def disconnect_all(self) -> None:
        self._ready.clear()
        for ws in list(self._sockets):
            await ws.close()

    # -- the gateway ----------------------------------------------------------------
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        compress = request.query.get("compress")
        compressor = stream_compressor(compress) if compress else None
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if compressor is not None:
            self._compress[ws] = compressor
        self._sockets.append(ws)
        await self._send(ws, {"op": 10, "d": {"heartbeat_interval": 45_000}})
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                data = json.loads(msg.data)
                if data["op"] == 1:
                    await self._send(ws, {"op": 11})
                elif data["op"] == 2:
                    await self._identified(ws)
        finally:
            self._sockets.remove(ws)
            self._compress.pop(ws, None)
        return ws

    async def _identified(self, ws: web.WebSocketResponse) -> None:
        await self._dispatch_to(ws, "READY", {
            "v": 10, "user": self.bot.payload(), "session_id": "fake-session",
            "resume_gateway_url": self.gateway_url, "shard": [0, 1],
            "guilds": [{"id": str(g.id), "unavailable": True} for g in self.guilds],
            "application": {"id": str(self.application_id), "flags": 0}})
        for guild in self.guilds:
            await self._dispatch_to(ws, "GUILD_CREATE", guild.payload())
        self._ready.set()

    async def _send(self, ws: web.WebSocketResponse, payload: Json) -> None:
        text = json.dumps(payload)
        compressor = self._compress.get(ws)
        if compressor is None:
            await ws.send_str(text)
        else:
            await ws.send_bytes(compressor(text.encode()))

    async def _dispatch_to(self, ws: web.WebSocketResponse, event: str, data: Json) -> None:
        await self._send(ws, {"op": 0, "t": event, "s": next(self._seq), "d": data})

    async def dispatch(self, event: str, data: Json) -> None:
        for ws in list(self._sockets):
            await self._dispatch_to(ws, event, data)

    # -- what users do -----------------------------------------------------------------
    def _guild_of(self, channel_id: int) -> Guild | None:
        for guild in self.guilds:
            if any(c.id == channel_id for c in guild.channels):
                return guild
        return None

    def _message(self, channel_id: int, author: User, content: str, *,
                 mentions: Iterable[User] = (), extra: Mapping[str, Any] | None = None) -> Json:
        guild = self._guild_of(channel_id)
        message: Json = {
            "id": str(next(self._ids)), "channel_id": str(channel_id), "author": author.payload(),
            "content": content, "timestamp": TIMESTAMP, "edited_timestamp": None, "tts": False,
            "mention_everyone": False, "mentions": [u.payload() for u in mentions],
            "mention_roles": [], "attachments": [], "embeds": [], "pinned": False, "type": 0,
            "flags": 0, "components": []}
        if guild is not None:
            message["guild_id"] = str(guild.id)
            if not author.bot:
                member = author.member()
                del member["user"]
                message["member"] = member
        message.update(extra or {})
        self.history.setdefault(channel_id, []).append(message)
        return message

    async def say(self, channel_id: int, author: User, content: str, *,
                  mentions: Iterable[User] = ()) -> Json:
        """``author`` writes ``content`` in a channel (one of no guild: a DM)."""
        message = self._message(channel_id, author, content, mentions=mentions)
        await self.dispatch("MESSAGE_CREATE", message)
        return message

    def _interaction(self, kind: int, channel_id: int, user: User, data: Json,
                     message: Json | None = None) -> Json:
        guild = self._guild_of(channel_id)
        payload: Json = {
            "id": str(next(self._ids)), "application_id": str(self.application_id),
            "type": kind, "data": data, "channel_id": str(channel_id),
            "token": f"token-{next(self._ids)}", "version": 1, "locale": "en-US",
            "app_permissions": "0", "attachment_size_limit": 8_388_608, "entitlements": [],
            "authorizing_integration_owners": {}, "context": 0 if guild else 1}
        if guild is not None:
            payload["guild_id"] = str(guild.id)
            payload["guild_locale"] = "en-US"
            payload["member"] = user.member()
            payload["channel"] = guild.channel(channel_id).payload(guild.id)
        else:
            payload["user"] = user.payload()
            payload["channel"] = {"id": str(channel_id), "type": 1,
                                  "recipients": [user.payload()]}
        if message is not None:
            payload["message"] = message
        return payload

    async def _interact(self, payload: Json) -> Sent:
        before = len(self.sent)
        self._pending[payload["id"]] = int(payload["channel_id"])
        if "message" in payload:
            self._clicked[payload["id"]] = payload["message"]["id"]
        self._token_interactions[payload["token"]] = payload["id"]
        await self.dispatch("INTERACTION_CREATE", payload)
        return await self.wait_for(lambda s: s.body.get("_interaction") == payload["id"],
                                   after=before)

    async def slash(self, channel_id: int, user: User, path: str, **options: Any) -> Sent:
        """Run ``/server stm parameters`` as ``slash(ch, user, "server stm parameters",
        refresh_cadence=3)``; returns the interaction's first answer."""
        root, *groups = path.split()
        # Options of the command, inside its subcommand groups (type 2) and
        # its subcommand (type 1), as Discord nests them.
        nested: list[Json] = [{"name": k.replace("_", "-"), "type": _option_type(v), "value": v}
                              for k, v in options.items()]
        for depth, name in enumerate(reversed(groups)):
            nested = [{"name": name, "type": 1 if depth == 0 else 2, "options": nested}]
        data: Json = {"id": "1", "name": root, "type": 1, "options": nested}
        guild = self._guild_of(channel_id)
        if guild is not None:
            data["guild_id"] = str(guild.id)
        return await self._interact(self._interaction(2, channel_id, user, data))

    async def submit_modal(self, opened: Sent, user: User, values: Mapping[str, str]) -> Sent:
        """Submit the modal ``opened`` showed; ``values`` by input label (inputs
        not named keep their prefilled value)."""
        modal = opened.modal
        assert modal is not None, f"not a modal: {opened.body}"
        channel_id = opened.channel_id
        assert channel_id is not None
        components = [_submitted(c, values) for c in modal["components"]]
        data = {"custom_id": modal["custom_id"], "components": components}
        return await self._interact(self._interaction(5, channel_id, user, data))

    async def click(self, on: Sent, user: User, custom_id: str, *,
                    values: Iterable[str] | None = None) -> Sent:
        """Press a button (or pick ``values`` in a select) of the message ``on``."""
        message = on.message
        assert message is not None and on.channel_id is not None
        component = _find_component(message.get("components") or [], custom_id)
        data: Json = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None:
            data["values"] = list(values)
        return await self._interact(self._interaction(3, on.channel_id, user, data, message))

    async def wait_for(self, match: Any, *, after: int = 0, timeout: float = 10) -> Sent:
        """The first thing sent (from index ``after``) that ``match`` accepts."""
        async def found() -> Sent:
            async with self._changed:
                while True:
                    for item in self.sent[after:]:
                        if match(item):
                            return item
                    await self._changed.wait()
        return await asyncio.wait_for(found(), timeout)

    async def messages_in(self, channel_id: int, count: int, *, after: int = 0,
                          timeout: float = 10) -> list[Sent]:
        """Wait until the bot has sent ``count`` messages to the channel."""
        async def enough() -> list[Sent]:
            async with self._changed:
                while True:
                    got = [s for s in self.sent[after:]
                           if s.kind == "message" and s.channel_id == channel_id]
                    if len(got) >= count:
                        return got
                    await self._changed.wait()
        return await asyncio.wait_for(enough(), timeout)

    async def _record(self, sent: Sent) -> None:
        async with self._changed:
            self.sent.append(sent)
            self._changed.notify_all()

    # -- REST --------------------------------------------------------------------------------
    async def _rest(self, request: web.Request) -> web.StreamResponse:
        parts = request.match_info["tail"].strip("/").split("/")
        body: Any = {}
        if request.can_read_body:
            if request.content_type == "application/json":
                body = await request.json()
            else:  # multipart: the JSON part
                reader = await request.multipart()
                async for part in reader:
                    if getattr(part, "name", None) == "payload_json":
                        body = json.loads(await part.text())  # type: ignore[union-attr]
        method = request.method
        # Interaction callbacks and webhooks carry their token in the path; every
        # other route needs the bot's token, as on Discord.
        if parts[0] not in ("interactions", "webhooks") and not request.headers.get(
                "Authorization", "").startswith("Bot "):
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        if parts == ["users", "@me"]:
            return _json(self.bot.payload())
        if parts == ["oauth2", "applications", "@me"]:
            return _json({"id": str(self.application_id), "name": self.bot.name,
                          "description": "", "icon": None, "bot_public": True,
                          "bot_require_code_grant": False, "verify_key": "0" * 64,
                          "owner": self.guilds[0].members[0].payload(), "flags": 0})
        if parts[0] == "applications" and parts[-1] == "commands" and method == "PUT":
            self.commands = body if isinstance(body, list) else []
            return _json([{**c, "id": str(next(self._ids)),
                           "application_id": str(self.application_id), "version": "1"}
                          for c in self.commands])
        if parts[0] == "channels" and parts[2:] == ["typing"]:
            return web.Response(status=204)
        if parts[0] == "channels" and parts[2:] == ["messages"]:
            channel_id = int(parts[1])
            if method == "GET":
                if self.fail_reads:
                    return _json({"message": "fake failure", "code": 0},
                                 status=self.fail_reads.pop(0))
                return _json(self._read_history(channel_id, request.query))
            if self.fail_sends:
                status = self.fail_sends.pop(0)
                await self._record(Sent(kind="failed", channel_id=channel_id, body=body))
                return _json({"message": "fake failure", "code": 0}, status=status)
            message = self._message(channel_id, self.bot, str(body.get("content") or ""),
                                    extra={"embeds": body.get("embeds") or [],
                                           "components": body.get("components") or []})
            await self._record(Sent(kind="message", channel_id=channel_id, body=body,
                                    message=message))
            # As Discord does, the bot hears its own message on the gateway.
            await self.dispatch("MESSAGE_CREATE", message)
            return _json(message)
        if parts[0] == "interactions" and parts[-1] == "callback":
            return await self._callback(parts[1], body)
        if parts[0] == "webhooks":
            return await self._webhook(method, parts, body)
        raise web.HTTPNotFound(text=f"the fake has no route {method} /{'/'.join(parts)}")

    def _read_history(self, channel_id: int, query: Mapping[str, str]) -> list[Json]:
        messages = list(self.history.get(channel_id, []))
        if "before" in query:
            messages = [m for m in messages if int(m["id"]) < int(query["before"])]
        limit = int(query.get("limit", 50))
        return list(reversed(messages))[:limit]

    async def _callback(self, interaction_id: str, body: Json) -> web.Response:
        channel_id = self._pending_channel(interaction_id)
        message = None
        if body.get("type") in (4, 7):
            data = body.get("data") or {}
            message = self._message_stub(channel_id, data)
            if body["type"] == 7:  # the clicked message, updated in place
                message["id"] = self._clicked[interaction_id]
        await self._record(Sent(kind="callback", channel_id=channel_id,
                                body={**body, "_interaction": interaction_id}, message=message))
        answer: Json = {"interaction": {"id": interaction_id, "type": 2,
                                        "response_message_id": message["id"] if message
                                        else None}}
        if message is not None:
            answer["resource"] = {"type": body["type"], "message": message}
        return _json(answer)

    def _message_stub(self, channel_id: int | None, data: Json) -> Json:
        return {"id": str(next(self._ids)), "channel_id": str(channel_id),
                "author": self.bot.payload(), "content": data.get("content") or "",
                "timestamp": TIMESTAMP, "edited_timestamp": None, "tts": False,
                "mention_everyone": False, "mentions": [], "mention_roles": [],
                "attachments": [], "embeds": data.get("embeds") or [], "pinned": False,
                "type": 20, "flags": int(data.get("flags") or 0),
                "components": data.get("components") or []}

    async def _webhook(self, method: str, parts: list[str], body: Json) -> web.Response:
        token = parts[2]
        interaction_id = self._token_interactions.get(token)
        channel_id = self._pending_channel(interaction_id or "")
        message = self._message_stub(channel_id, body)
        kind = "followup" if method == "POST" else "edit"
        await self._record(Sent(kind=kind, channel_id=channel_id,
                                body={**body, "_interaction": interaction_id}, message=message))
        return _json(message)

    def _pending_channel(self, interaction_id: str) -> int | None:
        return self._pending.get(interaction_id)


def _json(data: object, *, status: int = 200) -> web.Response:
    """A JSON answer; discord.py reads JSON only under this exact content type."""
    return web.Response(body=json.dumps(data).encode(), status=status,
                        headers={"Content-Type": "application/json"})


def _option_type(value: object) -> int:
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return 4
    return 3


def _submitted(component: Json, values: Mapping[str, str]) -> Json:
    """What Discord sends back for one component of a modal."""
    kind = component["type"]
    if kind == 1:
        return {"type": 1, "components": [_submitted(c, values) for c in component["components"]]}
    if kind == 18:
        inner = dict(component["component"])
        inner.setdefault("label", component.get("label"))
        return {"type": 18, "component": _submitted(inner, values)}
    if kind == 4:
        label = component.get("label")
        value = values.get(label or "", values.get(component["custom_id"],
                                                   component.get("value") or ""))
        return {"type": 4, "custom_id": component["custom_id"], "value": value}
    return {"type": kind, "custom_id": component.get("custom_id")}


def _find_component(components: list[Json], custom_id: str) -> Json:
    for component in components:
        if component.get("custom_id") == custom_id:
            return component
        for key in ("components",):
            if key in component:
                try:
                    return _find_component(component[key], custom_id)
                except LookupError:
                    pass
        if "component" in component:
            try:
                return _find_component([component["component"]], custom_id)
            except LookupError:
                pass
    raise LookupError(custom_id)


def stream_compressor(kind: str) -> Callable[[bytes], bytes]:
    """One gateway connection's transport compression, as Discord offers it:
    each message flushed whole, the stream's state kept across messages.
    discord.py asks for ``zstd-stream`` when it can read zstd (the
    ``zstandard`` package, or ``compression.zstd`` from Python 3.14), else
    ``zlib-stream``."""
    if kind == "zlib-stream":
        zlib_stream = zlib.compressobj()
        return lambda data: zlib_stream.compress(data) + zlib_stream.flush(zlib.Z_SYNC_FLUSH)
    if kind == "zstd-stream":
        try:
            import zstandard
        except ImportError:
            from compression import zstd  # type: ignore[import-not-found]

            zstd_stream = zstd.ZstdCompressor()
            return lambda data: (zstd_stream.compress(data)
                                 + zstd_stream.flush(zstd.ZstdCompressor.FLUSH_BLOCK))
        stream = zstandard.ZstdCompressor().compressobj()
        return lambda data: stream.compress(data) + stream.flush(
            zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    raise web.HTTPBadRequest(text=f"unsupported compression {kind}")
