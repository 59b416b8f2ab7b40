"""Stage 8, the same-channel block (reference §2.2; only on turns with tools).

The live row is the server-shared row in a server and the user's row in a DM,
for the turn's persona. No raw lines are ever shown for the current channel:
the live dialogue already holds them.

* Category mode: one line per configured category, in position order, with its
  original label; blank values and slugs no longer configured are skipped.
* Summary mode: the summary wins over stale categories (DESIGN decision 2);
  without a summary, the categories show with humanised slugs.

An expired row (the build passes none), or one with nothing to show, renders
nothing.
"""

from __future__ import annotations

from stm_core._util.one_slot_memo import LastMade
from stm_core.engine.profile import ServerProfile
from stm_core.models import Turn
from stm_core.pipeline.render_memo import RenderMemo, recall, remember
from stm_core.pipeline.render_other import humanized
from stm_core.storage.records import MemoryKey, MemoryRecord


def live_key(turn: Turn, user_id: str) -> MemoryKey:
    if turn.server_id is not None:
        return MemoryKey.server(turn.server_id, turn.channel_id, turn.persona_id)
    return MemoryKey.user(user_id, turn.channel_id, turn.persona_id, None)


def same_channel_body(record: MemoryRecord, profile: ServerProfile) -> str | None:
    categories = record.categories
    if profile.mode == "category":
        if categories:
            lines = []
            for slug, label in profile.slug_map.items():
                value = categories.get(slug)
                if value and value.strip():
                    lines.append(f"{label}: {value.strip()}")
            if lines:
                return "\n".join(lines)
        return record.summary or None
    if record.summary:
        return record.summary
    lines = [f"{humanized(slug)}: {value.strip()}"
             for slug, value in categories.items() if value.strip()]
    return "\n".join(lines) if lines else None


def live_body(profile: ServerProfile, record: MemoryRecord | None,
              memo: RenderMemo | None = None) -> str | None:
    """The body of the same-channel block of the live row (``record``, while
    it has not expired), or ``None`` when it renders nothing.
    With a ``memo``, a body rendered before for the same row and profile is
    not rendered again."""
    if record is None:
        return None
    if memo is None:
        return same_channel_body(record, profile)
    if not record.has_content:
        # Raw lines only (the live row between refreshes): nothing to render
        # and nothing worth an entry (the row is new on every turn).
        return None
    # The profile fixes the mode and the labels; the row, everything else.
    key = (id(record), id(profile))
    hit = recall(memo, key, record)
    if hit is not None:
        body: str | None = hit[0]
        return body
    body = same_channel_body(record, profile)
    remember(memo, key, body, record, profile)
    return body


def _block(inputs: tuple[str, str, bool]) -> str:
    body, bot, impersonation = inputs
    if impersonation:
        return f"[System: Short term memory for this ongoing conversation:\n{body}]"
    return f"[System: {bot}'s short term memory for this ongoing conversation:\n{body}]"


#: The block: the very object of the build before for the same body and names.
_blocks = LastMade(_block)


def wrap_same_channel(turn: Turn, body: str) -> str:
    """The same-channel block around its body (see :mod:`stm_core._util.one_slot_memo`)."""
    return _blocks((body, turn.bot_name, turn.is_user_impersonation))
