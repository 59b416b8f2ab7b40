"""A policy's declared hidden channels agree with its own answers.

The walk of a big server leaves out the rows of channels a visibility policy
declares hidden (``hides_channels``) without calling it for them, so the
declaration must never hide a row the policy itself would let through.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from stm_core.plugin_types import VisibilityContext, hidden_channels, hides_channels

from stm_core.models import Turn
from stm_core.storage.records import DM_SERVER, MemoryKey, MemoryRecord, ServerSettings
from stm_plugins.privacy import private_channels

CHANNELS = ("c1", "c2", "c3", "t1")


@given(server=st.sampled_from(["G", None]), channel=st.sampled_from(CHANNELS),
       parent=st.sampled_from([None, "c1", "c2"]),
       private=st.frozensets(st.sampled_from(CHANNELS)), bypass=st.booleans(),
       has_settings=st.booleans(), opt_in=st.booleans(),
       origin=st.sampled_from(["G", "other", DM_SERVER]),
       entry_channel=st.sampled_from(CHANNELS), entry_parent=st.sampled_from([None, "c1", "c2"]))
def test_the_built_in_policy_hides_every_row_it_declares_hidden(
        server: str | None, channel: str, parent: str | None, private: frozenset[str],
        bypass: bool, has_settings: bool, opt_in: bool, origin: str, entry_channel: str,
        entry_parent: str | None) -> None:
    turn = Turn(user_id="u", channel_id=channel, server_id=server, parent_channel_id=parent)
    current = (ServerSettings(server_id=server, private_channel_ids=private,
                              privacy_bypass=bypass)
               if server is not None and has_settings else None)
    ctx = VisibilityContext(
        turn=turn, current=current,
        current_is_private=server is not None and (channel in private or parent in private),
        crossserver_opt_in=opt_in, servers={server: current} if current and server else {})
    key = (MemoryKey.server(origin, entry_channel, None) if origin != DM_SERVER
           else MemoryKey.user("u", entry_channel, None, None))
    entry = MemoryRecord(key=key, parent_channel_id=entry_parent, summary="s")
    hidden = hidden_channels([private_channels], ctx)
    declared = entry_channel in hidden or (entry_parent is not None and entry_parent in hidden)
    if declared and origin == server:  # the declaration speaks of the turn's own server
        assert private_channels(entry, ctx) is False
    # It hides exactly the private channels when they are hidden at all.
    assert hidden in (frozenset(), private)


def test_the_hidden_channels_of_several_policies_add_up() -> None:
    @hides_channels(lambda ctx: frozenset({"a"}))
    def hide_a(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
        return False if entry.key.channel_id == "a" else None

    @hides_channels(lambda ctx: frozenset({"b"}))
    def hide_b(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
        return False if entry.key.channel_id == "b" else None

    def undeclared(entry: MemoryRecord, ctx: VisibilityContext) -> bool | None:
        return None

    ctx = VisibilityContext(turn=Turn(user_id="u", channel_id="c", server_id="G"),
                            current=None, current_is_private=False,
                            crossserver_opt_in=False, servers={})
    assert hidden_channels([hide_a, undeclared, hide_b], ctx) == {"a", "b"}
    assert hidden_channels([undeclared], ctx) == frozenset()
    assert hide_a(MemoryRecord(key=MemoryKey.server("G", "a", None)), ctx) is False
