"""The worked renderings (a)-(g) of the reference, byte for byte, on every backend."""

from __future__ import annotations

from stm_core._util.clock import ManualClock
from stm_core.store import Stm

from .support import (
    ART,
    DUNGEON,
    GENERAL,
    QUEST,
    Line,
    capture,
    make_turn,
    other_text,
    same_text,
    server_key,
    set_categories,
    set_opt_in,
    set_settings,
    user_key,
    write,
)

ART_SUMMARY = "Alice and Bob are planning a mural; palette teal/orange."

RENDERING_A = """\
[System: Tomori remembers a recent conversation in the channel named `general` (45 minutes ago):
Bob: "anyone up for a movie?"
Tomori: "Something spooky, please!"
]

[System: Tomori remembers a recent conversation in the channel named `art` (2 hours ago):
Alice and Bob are planning a mural; palette teal/orange.]

[System: Tomori's recent raw messages from the channel named `art`:
Alice: "teal or orange for the sky?"
Tomori: "Teal sky, orange sun."
]"""

RENDERING_B = """\
[System: Tomori remembers a recent conversation in the channel named `general` (45 minutes ago):
Bob: "anyone up for a movie?"
Tomori: "Something spooky, please!"
]

[System: Tomori remembers a recent conversation in the channel named `art` (2 hours ago):
Alice and Bob are planning a mural; palette teal/orange.]"""

RENDERING_E = """\
[System: Recent conversation in the channel named `general` (45 minutes ago):
Bob: "anyone up for a movie?"
Tomori: "Something spooky, please!"
]

[System: Recent conversation in the channel named `art` (2 hours ago):
Alice and Bob are planning a mural; palette teal/orange.]

[System: Recent raw messages from the channel named `art`:
Alice: "teal or orange for the sky?"
Tomori: "Teal sky, orange sun."
]"""


async def example_data(stm: Stm, clock: ManualClock) -> None:
    """#art: summary and 8 raw lines, 2 h ago; #general: 3 raw lines, 45 min ago."""
    await set_settings(stm, crude_message_count=2)
    art_lines: list[Line] = [("user", "Bob", f"old line {i}") for i in range(6)]
    await capture(stm, server_key(ART), *art_lines,
                  ("user", "Alice", "teal or orange for the sky?"),
                  ("model", "Tomori", "Teal sky, orange sun."))
    await write(stm, server_key(ART), summary=ART_SUMMARY)
    clock.advance(minutes=75)
    await capture(stm, server_key(GENERAL),
                  ("user", "Alice", "hi all"),
                  ("user", "Bob", "anyone up for a movie?"),
                  ("model", "Tomori", "Something spooky, please!"))
    clock.advance(minutes=45)


async def test_a_crude_summary_is_the_default(stm: Stm, clock: ManualClock) -> None:
    await example_data(stm, clock)
    ctx = await stm.build_context(make_turn())
    assert other_text(ctx) == RENDERING_A
    assert len(ctx.memory_items) == 1  # #quest has no memory of its own


async def test_b_supersede_replaces_raw_lines_only_where_a_summary_exists(
        stm: Stm, clock: ManualClock) -> None:
    await example_data(stm, clock)
    await set_settings(stm, render_mode="supersede")
    ctx = await stm.build_context(make_turn())
    assert other_text(ctx) == RENDERING_B


async def test_c_category_entry_in_another_channel(stm: Stm, clock: ManualClock) -> None:
    await set_categories(stm, ["Goals", "Party Status"])
    # Written in reverse order: lines still follow the configured positions.
    await write(stm, server_key(DUNGEON), categories={"party_status": "Alice is wounded",
                                                      "goals": "Reach the tower before dusk"})
    ctx = await stm.build_context(make_turn())
    assert other_text(ctx) == (
        "[System: Tomori remembers a recent conversation in the channel named `dungeon` "
        "(just now):\n"
        "Goals: Reach the tower before dusk\n"
        "Party Status: Alice is wounded]")


async def test_c_category_entry_with_raw_lines_in_crude_summary_mode(stm: Stm) -> None:
    await capture(stm, server_key(DUNGEON), ("user", "Bob", "left or right?"))
    await write(stm, server_key(DUNGEON), categories={"goals": "Reach the tower"})
    ctx = await stm.build_context(make_turn())
    assert other_text(ctx) == (
        "[System: Tomori remembers a recent conversation in the channel named `dungeon` "
        "(just now):\nGoals: Reach the tower]\n\n"
        "[System: Tomori's recent raw messages from the channel named `dungeon`:\n"
        'Bob: "left or right?"\n]')


async def test_d_cross_server_entry(stm: Stm, clock: ManualClock) -> None:
    await set_opt_in(stm)
    await write(stm, user_key("999", server="H"), summary="Alice was debugging her Rust parser.")
    clock.advance(hours=3)
    ctx = await stm.build_context(make_turn())
    assert other_text(ctx) == (
        "[System: Tomori remembers a recent conversation with Alice in a channel in another "
        "server (3 hours ago):\nAlice was debugging her Rust parser.]")


async def test_e_user_impersonation_headers(stm: Stm, clock: ManualClock) -> None:
    await example_data(stm, clock)
    ctx = await stm.build_context(make_turn(is_user_impersonation=True))
    assert other_text(ctx) == RENDERING_E


async def test_e_impersonation_headers_for_another_server(stm: Stm) -> None:
    await set_opt_in(stm)
    await capture(stm, user_key("999", server="H"), ("user", None, "ping"))
    await write(stm, user_key("999", server="H"), summary="Parser talk.")
    ctx = await stm.build_context(make_turn(is_user_impersonation=True))
    assert other_text(ctx) == (
        "[System: Recent conversation with Alice in a channel in another server (just now):\n"
        "Parser talk.]\n\n"
        "[System: Recent raw messages with Alice in a channel in another server:\n"
        'Alice: "ping"\n]')


async def test_f_same_channel_summary_mode(stm: Stm) -> None:
    await write(stm, server_key(QUEST, persona="p1"),
                summary="The party entered the crypt; Bob holds the silver key.")
    ctx = await stm.build_context(make_turn(persona_id="p1"))
    assert same_text(ctx) == (
        "[System: Tomori's short term memory for this ongoing conversation:\n"
        "The party entered the crypt; Bob holds the silver key.]")
    assert [i.kind for i in ctx.memory_items] == ["same_channel"]


async def test_f_same_channel_impersonation_variant(stm: Stm) -> None:
    await write(stm, server_key(QUEST), summary="The crypt.")
    ctx = await stm.build_context(make_turn(is_user_impersonation=True))
    assert same_text(ctx) == (
        "[System: Short term memory for this ongoing conversation:\nThe crypt.]")


async def test_g_same_channel_category_mode_and_seen_from_elsewhere(stm: Stm) -> None:
    await set_categories(stm, ["Goals", "HP/MP"])
    await write(stm, server_key(QUEST), categories={"hp_mp": "Alice 12/30, Bob 40/5",
                                                    "goals": "Find the exit"})
    ctx = await stm.build_context(make_turn())
    assert same_text(ctx) == (
        "[System: Tomori's short term memory for this ongoing conversation:\n"
        "Goals: Find the exit\n"
        "HP/MP: Alice 12/30, Bob 40/5]")

    elsewhere = await stm.build_context(make_turn(channel_id=ART))
    assert other_text(elsewhere) == (
        "[System: Tomori remembers a recent conversation in the channel named `quest` "
        "(just now):\n"
        "Goals: Find the exit\n"
        "Hp Mp: Alice 12/30, Bob 40/5]")


async def test_items_are_other_channels_then_same_channel(stm: Stm) -> None:
    await write(stm, server_key(ART), summary="Mural.")
    await write(stm, server_key(QUEST), summary="Crypt.")
    ctx = await stm.build_context(make_turn())
    assert [i.kind for i in ctx.memory_items] == ["other_channels", "same_channel"]
    assert all(i.role == "user" and i.tag == "KNOWLEDGE_SHORT_TERM_MEMORY"
               for i in ctx.memory_items)
