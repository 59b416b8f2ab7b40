"""The demo's servers, channels and people, as a host would describe them to stm.

:class:`World` turns transcript keys into the ids and names of a :class:`Turn`,
and configures the servers through the admin API, the way an operator would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stm_core.cli.demo.results import Where
from stm_core.cli.demo.transcript import Channel, ScriptedTurn, Transcript
from stm_core.models import Turn

if TYPE_CHECKING:
    from stm_core.store import Stm


class World:
    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        channels = transcript.channels.values()
        self._user_names = {u.id: u.name for u in transcript.users.values()}
        self._channel_names = {c.id: c.name for c in channels}
        self._thread_ids = frozenset(c.id for c in channels if c.parent is not None)

    def where(self, channel_key: str) -> Where:
        channel = self.transcript.channels[channel_key]
        server = (None if channel.server is None
                  else self.transcript.servers[channel.server])
        return Where(channel_id=channel.id, channel_name=channel.name,
                     server_id=None if server is None else server.id,
                     server_name=None if server is None else server.name,
                     visibility=self._visibility(channel))

    def _visibility(self, channel: Channel) -> str:
        if channel.server is None:
            return "dm"
        if not self.transcript.is_private(channel):
            return "public"
        return "thread" if channel.parent is not None else "private"

    def turn(self, scripted: ScriptedTurn) -> Turn:
        """The ``Turn`` a host builds for this bot turn (triggered by the last speaker)."""
        t = self.transcript
        channel = t.channels[scripted.channel]
        server = None if channel.server is None else t.servers[channel.server]
        persona = t.personas[scripted.persona]
        user = t.users[scripted.messages[-1].user]
        parent = None if channel.parent is None else t.channels[channel.parent].id
        return Turn(
            user_id=user.id, channel_id=channel.id,
            server_id=None if server is None else server.id,
            parent_channel_id=parent,
            persona_id=persona.id, persona_lineage_id=persona.lineage,
            bot_name=persona.name, triggerer_name=user.name,
            provider=persona.provider, model=persona.model, has_tools=persona.has_tools,
            server_name=None if server is None else server.name,
            channel_name=channel.name,
            user_names=self._user_names, channel_names=self._channel_names,
            thread_ids=self._thread_ids,
        )

    def system_prompt(self, scripted: ScriptedTurn) -> str:
        persona = self.transcript.personas[scripted.persona]
        where = self.where(scripted.channel)
        place = ("a direct message" if where.server_name is None
                 else f"#{where.channel_name} on the {where.server_name} server")
        return f"You are {persona.name}, {persona.role}. You are chatting in {place}."

    async def configure(self, stm: Stm, *, cache_policy: str | None = None) -> None:
        """Set the servers up as the transcript describes, through ``stm.admin``.

        Everything the demo touches is reset first (its own server, channel and
        user ids only), so a replay on a kept database starts from the same state.
        """
        admin = stm.admin
        t = self.transcript
        for server in t.servers.values():
            await admin.reset_server_params(server.id)
            await admin.reset_prompts(server.id)
            await admin.set_stm_enabled(server.id, enabled=True)
            await admin.set_privacy_bypass(server.id, bypass=False)
            if server.categories:
                await admin.set_categories(
                    server.id, [f"{c.label}: {c.description}" for c in server.categories])
            else:
                await admin.reset_categories(server.id)
            await admin.set_private_channels(
                server.id, channel_ids=[t.channels[k].id for k in server.private_channels])
            if server.render_mode is not None:
                await admin.set_server_params(server.id, render_mode=server.render_mode)
            if cache_policy is not None:
                await admin.set_server_params(server.id, cache_policy=cache_policy)
        for channel in t.channels.values():
            await admin.clear_channel(channel.id)
        for key, user in t.users.items():
            await admin.set_user_opt_in(user.id, opt_in=key in t.crossserver_opt_in)
