"""Private helpers that know nothing of stm: the clock, argument checks,
telemetry counters, one-slot memos, fast construction of frozen records, and
the table of moved import paths.

The lowest layer: a module here imports no other part of stm_core, and none is
public (its names may change in any release). Anything that knows what a
memory, a server or a turn is belongs higher up.
"""
