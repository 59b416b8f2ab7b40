"""Stage 7, render the other-channel memories as one text (reference §2.1).

Each entry becomes an :class:`OtherChannelParts` (headers, body, capped raw
lines) that the server's render mode assembles; the entries are joined and
the whole text trimmed. Channels of the current server are referred to by the
name the turn gives them (``<#id>`` when it gives none); anything else is "a
channel in another server".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

from hookspecs.types import OtherChannelParts
from stm_core._util.one_slot_memo import LastMade
from stm_core.engine.profile import ServerProfile
from stm_core.mention_names import channel_naming, channel_reference
from stm_core.models import CrudeMessage, Turn
from stm_core.pipeline.render_memo import RenderMemo, recall, remember
from stm_core.storage.records import DM_SERVER, MemoryRecord
from stm_core.text.reltime import relative_time
from stm_core.text.slugs import humanize_slug

#: ``origin server id -> slug -> label`` in position order, or ``None`` (DMs).
CategoryOrder = Callable[[str], Mapping[str, str] | None]

OTHER_SERVER = "a channel in another server"

# Slugs repeat across turns; humanising them once is enough.
humanized = lru_cache(maxsize=4096)(humanize_slug)


def ordered_categories(categories: Mapping[str, str],
                       order: Mapping[str, str] | None) -> Iterable[tuple[str, str]]:
    """Configured slugs first, in position order (DESIGN decision 6), then any
    slug the server no longer configures, in stored order."""
    if order is None:
        return categories.items()
    first = [(slug, categories[slug]) for slug in order if slug in categories]
    if len(first) == len(categories):
        return first
    return first + [(s, v) for s, v in categories.items() if s not in order]


def entry_body(record: MemoryRecord, order: CategoryOrder) -> str | None:
    """Category lines (humanised slugs) when any has text, else the summary."""
    categories = record.categories
    if categories:
        lines = [f"{humanized(slug)}: {value.strip()}"
                 for slug, value in ordered_categories(categories, order(record.key.server_id))
                 if value.strip()]
        if lines:
            return "\n".join(lines)
    return record.summary or None


def crude_line(message: CrudeMessage, shared: bool, turn: Turn) -> str:
    speaker = message.speaker_name
    if not speaker:
        if message.role == "user":
            speaker = "Someone" if shared else turn.triggerer_name
        else:
            speaker = turn.bot_name
    return f'{speaker}: "{message.content}"\n'


def entry_parts(record: MemoryRecord, turn: Turn, *, now_ms: int, current_server: str,
                crude_count: int, order: CategoryOrder,
                stable: bool = False) -> OtherChannelParts:
    key = record.key
    same_server = key.server_id == current_server
    # "Shared" means a server-wide memory of the server we are talking in.
    shared = same_server and turn.server_id is not None
    chan = channel_reference(key.channel_id, turn) if same_server else OTHER_SERVER
    # No age under the stable cache policy: it changes with the clock alone.
    rel = "" if stable else f" ({relative_time(now_ms - record.updated_at_ms)})"
    bot = turn.bot_name
    if turn.is_user_impersonation:
        if shared:
            memory_header = f"[System: Recent conversation in {chan}{rel}:\n"
            raw_header = f"[System: Recent raw messages from {chan}:\n"
        else:
            user = turn.triggerer_name
            memory_header = f"[System: Recent conversation with {user} in {chan}{rel}:\n"
            raw_header = f"[System: Recent raw messages with {user} in {chan}:\n"
    elif shared:
        memory_header = f"[System: {bot} remembers a recent conversation in {chan}{rel}:\n"
        raw_header = f"[System: {bot}'s recent raw messages from {chan}:\n"
    else:
        user = turn.triggerer_name
        memory_header = (f"[System: {bot} remembers a recent conversation with {user} "
                         f"in {chan}{rel}:\n")
        raw_header = f"[System: {bot}'s recent raw messages with {user} in {chan}:\n"
    messages = record.messages[-crude_count:] if record.messages and crude_count else ()
    return OtherChannelParts(
        memory_header=memory_header,
        raw_header=raw_header,
        body=entry_body(record, order),
        crude_lines=tuple([crude_line(m, shared, turn) for m in messages]),
    )


def render_other_channels(turn: Turn, profile: ServerProfile, entries: list[MemoryRecord],
                          now_ms: int, order: CategoryOrder,
                          crude_count: int | None = None,
                          memo: RenderMemo | None = None) -> tuple[str, int | None]:
    """The trimmed text of every entry (``""`` when none renders) and the
    newest ``updated_at_ms`` among the entries that rendered something.
    ``crude_count`` (the prompt budget's) may show fewer raw lines than the
    server's ``crude_message_count``. With a ``memo``, an entry rendered before
    with the same inputs is not rendered again: the row, its server's category
    order, the render mode, and what the headers and raw lines take from the
    turn (the channel's naming, age label, names, impersonation)."""
    render = profile.render_mode.render
    current_server = turn.server_id if turn.server_id is not None else DM_SERVER
    if crude_count is None:
        crude_count = profile.crude_message_count
    stable = profile.stable
    # The memo key's part that is the same for every entry of this turn.
    fixed = (id(render), turn.server_id is None, crude_count, turn.bot_name,
             turn.triggerer_name, turn.is_user_impersonation)
    pieces: list[str] = []
    newest: int | None = None
    # The category order every entry of the current server asks for.
    current_slugs = order(current_server) if memo is not None else None
    for record in entries:
        if memo is None:
            piece = render(entry_parts(record, turn, now_ms=now_ms,
                                       current_server=current_server,
                                       crude_count=crude_count, order=order, stable=stable))
        else:
            key = record.key
            server_id = key.server_id
            same_server = server_id == current_server
            # The channel's naming, not its label: no string made to look one up.
            naming = channel_naming(key.channel_id, turn) if same_server else None
            age = "" if stable else relative_time(now_ms - record.updated_at_ms)
            slugs = current_slugs if same_server else order(server_id)
            memo_key = (id(record), id(slugs), same_server, naming, age, fixed)
            hit = recall(memo, memo_key, record)
            if hit is not None:
                piece = hit[0]
            else:
                piece = render(entry_parts(record, turn, now_ms=now_ms,
                                           current_server=current_server,
                                           crude_count=crude_count, order=order,
                                           stable=stable))
                remember(memo, memo_key, piece, record, slugs, render)
        if piece:
            pieces.append(piece)
            if newest is None or record.updated_at_ms > newest:
                newest = record.updated_at_ms
    return _joined(tuple(pieces)), newest


def _join(pieces: tuple[str, ...]) -> str:
    return "".join(pieces).strip()


#: The entries' text: the very object of the build before for the same pieces.
_joined = LastMade(_join)
