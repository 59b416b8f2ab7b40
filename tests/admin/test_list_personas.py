"""Which rows ``admin.list_personas`` lists: only the asked place's live scope
(the server's channel rows in a guild, the user's own rows in a DM), never a
row of another server, another user or another channel."""

from __future__ import annotations

from stm_core.admin.values import PersonaMemory
from stm_core.store import Stm


def listed(personas: tuple[PersonaMemory, ...]) -> list[tuple[str, str]]:
    return [(p.channel_id, p.persona_id) for p in personas]


async def test_listing_personas_of_a_server_ignores_the_same_channel_id_in_another_server(
        stm: Stm) -> None:
    await stm.admin.edit_memory(channel_id="c1", server_id="g1", persona_id="mine",
                                summary="ours")
    await stm.admin.edit_memory(channel_id="c1", server_id="g2", persona_id="theirs",
                                summary="not ours")
    assert listed(await stm.admin.list_personas(channel_id="c1", server_id="g1")) == \
        [("c1", "mine")]
    assert listed(await stm.admin.list_personas(server_id="g1")) == [("c1", "mine")]


async def test_listing_a_dm_channel_shows_only_that_channel_of_that_user(stm: Stm) -> None:
    await stm.admin.edit_memory(channel_id="dm1", user_id="u1", persona_id="asked",
                                summary="this DM")
    await stm.admin.edit_memory(channel_id="dm2", user_id="u1", persona_id="other-dm",
                                summary="another DM of the same user")
    # A group DM: another member's own memory in the same channel is theirs.
    await stm.admin.edit_memory(channel_id="dm1", user_id="u2", persona_id="other-user",
                                summary="another user's")
    # The user's copy of a guild channel's memory is not a DM row.
    await stm.admin.edit_memory(channel_id="dm1", server_id="g1", user_id="u1",
                                persona_id="guild-copy", summary="from a guild")
    personas = await stm.admin.list_personas(channel_id="dm1", user_id="u1")
    assert listed(personas) == [("dm1", "asked")]
    assert personas[0].mode_hint == "summary"


async def test_a_cleared_memory_is_skipped_and_the_rows_after_it_still_listed(
        stm: Stm) -> None:
    for persona in ("a-cleared", "b-kept", "c-cleared", "d-kept"):
        await stm.admin.edit_memory(channel_id="c1", server_id="g1", persona_id=persona,
                                    summary="text")
    for persona in ("a-cleared", "c-cleared"):
        await stm.admin.edit_memory(channel_id="c1", server_id="g1", persona_id=persona,
                                    summary="")
    assert listed(await stm.admin.list_personas(channel_id="c1", server_id="g1")) == \
        [("c1", "b-kept"), ("c1", "d-kept")]
