"""Where the block and the nudge go under a server's prompt-cache policy.

Provider prompt caches bill the unchanged prefix of a prompt at a fraction of
the price, so what sits above the dialogue should change only when memory does.

* ``freshness`` (default, the reference's behaviour): other channels carry
  relative ages, a fresh block moves closer to the dialogue, the nudge sits at
  its configured depth.
* ``stable``: no ages (they change with the clock, not with memory); the
  block never moves for freshness and sits at the server's content depth, an
  anchored block going to the tail, after the dialogue, so that a memory write
  re-bills only the block; the nudge, which comes and goes, sits last.
"""

from __future__ import annotations

from stm_core.engine.profile import ServerProfile

#: The nudge's depth under ``stable``: the very end, below the block.
STABLE_NUDGE_DEPTH = 0


def stable_memory_depth(configured: int) -> int:
    """A fixed depth from the tail; anchored (``-1``) becomes the tail itself."""
    return max(configured, 0)


def nudge_depth(profile: ServerProfile) -> int:
    return STABLE_NUDGE_DEPTH if profile.stable else profile.nudge_injection_depth


def base_memory_depth(profile: ServerProfile) -> int:
    """The block's depth before any freshness move (none under ``stable``)."""
    configured = profile.content_injection_depth
    return stable_memory_depth(configured) if profile.stable else configured
