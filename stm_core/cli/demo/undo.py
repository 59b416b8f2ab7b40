"""The demo's closing scene: a model rewrite that loses the memory, undone.

After the transcript, the model rewrites one guild channel's memory with
nothing worth keeping (what a degraded summary looks like), and an operator
undoes it with ``admin.undo_memory``, the call behind ``stm memory undo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from stm_core.cli.demo.model import schema_properties
from stm_core.cli.demo.transcript import ScriptedTurn, Transcript
from stm_core.cli.demo.world import World

if TYPE_CHECKING:
    from stm_core.store import Stm

BAD_REWRITE = "(nothing worth keeping)"


@attrs.frozen(kw_only=True)
class UndoScene:
    channel_name: str
    persona_name: str
    before: str
    bad: str
    restored: str
    restored_from: int
    rev: int


def _guild_turns(transcript: Transcript) -> list[ScriptedTurn]:
    """Guild turns of personas with tools, latest first."""
    return [s for s in reversed(transcript.turns)
            if transcript.channels[s.channel].server is not None
            and transcript.personas[s.persona].has_tools]


async def undo_scene(stm: Stm, world: World) -> UndoScene | None:
    """The scene on the latest guild channel that holds a memory, if any."""
    admin = stm.admin
    for scripted in _guild_turns(world.transcript):
        turn = world.turn(scripted)
        server, channel, persona = turn.server_id, turn.channel_id, turn.persona_id
        before = await admin.view_memory(server_id=server, channel_id=channel,
                                         persona_id=persona)
        fields = schema_properties(await stm.tool_schema(turn, "neutral"))
        if not before.is_empty and fields:
            break
    else:
        return None
    await stm.apply_tool_call(turn, dict.fromkeys(fields, BAD_REWRITE))
    bad = await admin.view_memory(server_id=server, channel_id=channel, persona_id=persona)
    undone = await admin.undo_memory(server_id=server, channel_id=channel, persona_id=persona)
    return UndoScene(channel_name=turn.channel_name or turn.channel_id,
                     persona_name=turn.bot_name, before=before.text, bad=bad.text,
                     restored=undone.snapshot.text, restored_from=undone.restored_from,
                     rev=undone.rev)
