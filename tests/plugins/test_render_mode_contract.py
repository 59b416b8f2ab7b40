"""The render-mode contract as the hook reference states it: what ``parts``
holds, and what stm does with the returned text."""

from __future__ import annotations

from collections.abc import Iterable

from stm_core import (
    HistoryMessage,
    OtherChannelParts,
    PersonaResponse,
    RenderMode,
    Settings,
    hookimpl,
    open_store,
)
from stm_core.models import Turn

SEEN: list[OtherChannelParts] = []


def spy(parts: OtherChannelParts) -> str:
    SEEN.append(parts)
    return f"\n\n{parts.memory_header}{parts.body}]\n\n\n"  # stray whitespace on both ends


class SpyMode:
    @hookimpl
    def stm_register_render_modes(self) -> Iterable[RenderMode]:
        return [RenderMode(key="spy", render=spy)]


def turn(channel_id: str) -> Turn:
    return Turn(user_id="1001", channel_id=channel_id, server_id="3001", provider="openai",
                bot_name="Tomori", triggerer_name="Alice")


async def test_parts_and_output_follow_the_documented_shapes() -> None:
    SEEN.clear()
    async with open_store("memory://", settings=Settings(), plugins=[SpyMode()],
                          load_entrypoints=False) as stm:
        await stm.admin.set_server_params("3001", render_mode="spy")
        await stm.admin.set_categories(
            "3001", ["Goals: where the party goes", "Mood: how they feel"])
        assert (await stm.apply_tool_call(turn("2002"), {"goals": "the mill",
                                                         "mood": "tense"})).ok
        await stm.record_turn(
            turn("2002"), [HistoryMessage(author_type="user", content="go", speaker_name="Alice")],
            [PersonaResponse(content="Going.", persona_name="Tomori")])

        context = await stm.build_context(turn("2001"))

    [parts] = SEEN
    assert parts.memory_header.startswith("[System: Tomori remembers a recent conversation in ")
    assert parts.memory_header.endswith("(just now):\n")
    assert parts.raw_header.startswith("[System: Tomori's recent raw messages from ")
    assert parts.raw_header.endswith(":\n")
    assert parts.body is not None and "\n" in parts.body and not parts.body.endswith("\n")
    assert parts.crude_lines == ('Alice: "go"\n', 'Tomori: "Going."\n')
    [block] = [i.text for i in context.memory_items if i.kind == "other_channels"]
    assert block.startswith("[System: Tomori remembers") and block.endswith("]")
    assert block.count("\n\n") == 0
