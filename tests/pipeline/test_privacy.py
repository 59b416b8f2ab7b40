"""Private channels, thread inheritance, bypass, cross-server and DM policy."""

from __future__ import annotations

from stm_core._util.clock import ManualClock
from stm_core.store import Stm

from .support import (
    ART,
    GENERAL,
    OpenStm,
    capture,
    make_turn,
    other_text,
    server_key,
    set_opt_in,
    set_settings,
    user_key,
    write,
)

SECRET = "700"          # a private channel of G
SECRET_THREAD = "701"   # a thread under it
PUBLIC_THREAD = "702"   # a thread under #general


async def private_setup(stm: Stm) -> None:
    await set_settings(stm, private_channel_ids=[SECRET])
    await write(stm, server_key(SECRET), summary="secret plans")
    await write(stm, server_key(SECRET_THREAD), summary="secret thread talk", parent=SECRET)
    await write(stm, server_key(PUBLIC_THREAD), summary="public thread talk", parent=GENERAL)
    await write(stm, server_key(ART), summary="mural talk")


async def test_private_channels_and_their_threads_stay_out_of_public_ones(stm: Stm) -> None:
    await private_setup(stm)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "secret" not in text
    assert "public thread talk" in text and "mural talk" in text


async def test_a_private_channel_sees_everything(stm: Stm) -> None:
    await private_setup(stm)
    await write(stm, server_key("703"), summary="other secret", parent=None)
    await set_settings(stm, private_channel_ids=[SECRET, "703"])
    text = other_text(await stm.build_context(make_turn(channel_id="703")))
    assert text is not None
    assert "secret plans" in text and "secret thread talk" in text


async def test_a_thread_under_a_private_channel_sees_everything(stm: Stm) -> None:
    await private_setup(stm)
    turn = make_turn(channel_id="704", parent_channel_id=SECRET)
    text = other_text(await stm.build_context(turn))
    assert text is not None
    assert "secret plans" in text and "secret thread talk" in text


async def test_bypass_shows_private_channels(stm: Stm) -> None:
    await private_setup(stm)
    await set_settings(stm, privacy_bypass=True)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "secret plans" in text and "secret thread talk" in text


async def test_privacy_is_applied_before_the_cap(stm: Stm, clock: ManualClock) -> None:
    await set_settings(stm, private_channel_ids=["801", "802", "803"])
    await write(stm, server_key(ART), summary="older public one")
    await write(stm, server_key(GENERAL), summary="newer public one")
    clock.advance(minutes=1)
    for channel in ("801", "802", "803"):
        await write(stm, server_key(channel), summary=f"private {channel}")
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "older public one" in text and "newer public one" in text
    assert "private" not in text


async def test_thread_privacy_survives_a_restart(open_stm: OpenStm, db_url: str) -> None:
    async with open_stm(db_url) as stm:
        await set_settings(stm, private_channel_ids=[SECRET])
        await capture(stm, server_key(SECRET_THREAD), ("user", "Bob", "whisper"),
                      parent=SECRET)
        await write(stm, server_key(ART), summary="mural talk")
        before = other_text(await stm.build_context(make_turn()))
    async with open_stm(db_url) as stm:
        after = other_text(await stm.build_context(make_turn()))
        inside = other_text(await stm.build_context(
            make_turn(channel_id="705", parent_channel_id=SECRET)))
    assert before == after
    assert after is not None and "whisper" not in after and "mural talk" in after
    assert inside is not None and "whisper" in inside


async def test_no_cross_server_recall_without_opt_in(stm: Stm) -> None:
    await write(stm, user_key("900", server="H"), summary="other server chat")
    assert other_text(await stm.build_context(make_turn())) is None
    await set_opt_in(stm)
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None and "other server chat" in text


async def test_dm_memories_never_reach_a_server(stm: Stm) -> None:
    await set_opt_in(stm)
    await write(stm, user_key("dm-1"), summary="a private DM chat")
    await write(stm, user_key("900", server="H"), summary="other server chat")
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "other server chat" in text and "a private DM chat" not in text


async def test_other_servers_private_channels_never_fold_in(stm: Stm) -> None:
    await set_opt_in(stm)
    # H's private list applies even though H bypasses privacy for itself,
    # and even though the current server has no private channels at all.
    await set_settings(stm, "H", private_channel_ids=["901"], privacy_bypass=True)
    await write(stm, user_key("901", server="H"), summary="H private")
    await write(stm, user_key("902", server="H"), summary="H private thread", parent="901")
    await write(stm, user_key("903", server="H"), summary="H public")
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None
    assert "H public" in text and "H private" not in text
    # A private current channel does not unlock another server's private channels.
    await set_settings(stm, private_channel_ids=["333"])
    text = other_text(await stm.build_context(make_turn()))
    assert text is not None and "H private" not in text


async def test_other_servers_private_channels_stay_hidden_in_dms(stm: Stm) -> None:
    await set_opt_in(stm)
    await set_settings(stm, "H", private_channel_ids=["901"])
    await write(stm, user_key("901", server="H"), summary="H private")
    await write(stm, user_key("903", server="H"), summary="H public")
    text = other_text(await stm.build_context(make_turn(server_id=None, channel_id="dm-1")))
    assert text is not None
    assert "H public" in text and "H private" not in text


async def test_the_same_channel_block_ignores_privacy(stm: Stm) -> None:
    await set_settings(stm, private_channel_ids=["333"])
    await write(stm, server_key("333"), summary="our private plans")
    ctx = await stm.build_context(make_turn())
    assert [i.kind for i in ctx.memory_items] == ["same_channel"]
