"""Names of the ids a turn knows: how stm refers to a user, role or channel.

Shared by the pipeline (other-channel headers name their channel directly,
whatever the platform's id format) and by the platform mention converters
(``stm_plugins.discord_mentions``, ``stm_plugins.slack_mentions``), so a
channel reads the same however it was referred to.
"""

from __future__ import annotations

from collections.abc import Mapping

from stm_core.models import Turn
from stm_core.name_maps import shared_names

# The names shared by several channels in the last name map asked about: a
# turn asks about its channels several times, and a plain map is that turn's
# own copy (each Turn copies one), so one remembered map covers a turn; a
# NameMap answers from what it found once. Holding the map keeps its
# identity from being reused by another.
_last_clashes: tuple[Mapping[str, str], frozenset[str]] = ({}, frozenset())


def _clashing_names(channel_names: Mapping[str, str]) -> frozenset[str]:
    """The names several channels share (asked only for a map not seen last)."""
    global _last_clashes
    clashes = shared_names(channel_names)
    _last_clashes = (channel_names, clashes)
    return clashes


def channel_label(channel_id: str, turn: Turn, fallback_name: str | None = None) -> str | None:
    """``the channel named `name` `` (``the thread named ...`` for threads, with
    an ID suffix when two channels share the name), or ``None`` when neither
    the turn nor ``fallback_name`` (a name the mention itself carried) names it."""
    naming = channel_naming(channel_id, turn, fallback_name)
    if naming is None:
        return None
    name, thread, shared = naming
    suffix = f" (ID: {channel_id})" if shared else ""
    return f"the {'thread' if thread else 'channel'} named `{name}`{suffix}"


def channel_naming(channel_id: str, turn: Turn,
                   fallback_name: str | None = None) -> tuple[str, bool, bool] | None:
    """What :func:`channel_label` makes a channel's label of: its name in the
    turn (else ``fallback_name``), whether it is a thread, whether another
    channel shares the name (``None``: nothing names it). Equal namings of
    one channel give equal labels; a memo keyed by it makes no label string
    to find one it made before."""
    names = turn.channel_names
    name = names.get(channel_id, fallback_name)
    if not name:
        return None
    # Every label of a build asks: the last map's answer, without a call.
    seen_map, clashes = _last_clashes
    if seen_map is not names:
        clashes = _clashing_names(names)
    return name, channel_id in turn.thread_ids, name in clashes


def channel_reference(channel_id: str, turn: Turn) -> str:
    """How a header names a channel: its label, else the neutral ``<#id>``
    (which a platform's mention converter may still name)."""
    return channel_label(channel_id, turn) or f"<#{channel_id}>"


def role_label(role_id: str, turn: Turn, fallback_name: str | None = None) -> str | None:
    name = turn.role_names.get(role_id, fallback_name)
    return None if not name else "@" + name.removeprefix("@")
