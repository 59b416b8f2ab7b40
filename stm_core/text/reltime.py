"""How long ago, in words, as other-channel headers show it (reference §2.1).

Floor division at every step; a negative age (a clock skew, a row written
"in the future") reads as ``just now``.
"""

from __future__ import annotations

MINUTE_MS = 60_000


def relative_time(age_ms: int) -> str:
    """``just now``, ``N minute(s) ago``, ``N hour(s) ago``, ``N day(s) ago``
    or ``over a week ago``."""
    minutes = age_ms // MINUTE_MS
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return "1 minute ago" if minutes == 1 else f"{minutes} minutes ago"
    hours = minutes // 60
    if hours < 24:
        return "1 hour ago" if hours == 1 else f"{hours} hours ago"
    days = hours // 24
    if days < 7:
        return "1 day ago" if days == 1 else f"{days} days ago"
    return "over a week ago"
