"""Helpers shared by the reliability tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

SCALE_ENV = "STM_RELIABILITY_SCALE"
ROOT = Path(__file__).resolve().parents[2]


def full_scale() -> bool:
    return os.environ.get(SCALE_ENV) == "full"


def scaled(ci: int, full: int) -> int:
    """``ci`` on every test run, ``full`` under ``make reliability``."""
    return full if full_scale() else ci


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process running stm from this tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def child_command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"tests.reliability.{module}", *args]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def add_figure(figures: dict[str, Any], name: str, value: Any) -> None:
    """Counts add up across tests; other values are replaced."""
    if isinstance(value, int) and isinstance(figures.get(name), int):
        figures[name] += value
    else:
        figures[name] = value


async def cache_problems(stm: Any) -> list[str]:
    """Where the store's cache disagrees with its database (empty: none).

    Every cached row must equal the stored one, every row remembered as
    absent must be absent, cached settings and preferences must equal the
    stored ones, and a cached view must hold every row of its scope the
    database holds within the load window.
    """
    from stm_core.storage.records import MemoryFilter

    adapter = stm.adapter
    cache = stm.cache
    problems: list[str] = []
    since = stm.clock.now_ms() - stm.settings.longest_ttl_ms
    # Copies: other processes' notices may still change the views meanwhile.
    views = [(("server", sid), view) for sid, view in list(cache.servers._data.items())]
    views += [(("user", uid), user.memories) for uid, user in list(cache.users._data.items())]
    for (kind, ident), view in views:
        ordered = view.oldest_first()
        times = [r.updated_at_ms for r in ordered]
        if times != sorted(times) or len(ordered) != len(view.records):
            problems.append(f"the cached {kind} view {ident} is out of recency order")
        for key, record in list(view.records.items()):
            stored = await adapter.get_memory(key)
            if stored != record:
                problems.append(f"cached {key} is {record}, stored {stored}")
        for key in list(view.absent):
            if await adapter.get_memory(key) is not None:
                problems.append(f"{key} cached as absent but stored")
        flt = (MemoryFilter(server_id=ident, scope_kind="server") if kind == "server"
               else MemoryFilter(user_id=ident, scope_kind="user"))
        for row in await adapter.list_memories(flt):
            # A view bounded by cache_max_rows_per_view may lack rows it dropped.
            if (row.updated_at_ms >= since and row.key not in view.records
                    and not view.may_lack(row.updated_at_ms)):
                problems.append(f"{row.key} stored but missing from the cached {kind} view")
    for sid, cached in cache.settings._data.items():
        stored_settings = await adapter.load_server_settings(sid)
        if stored_settings != cached:
            problems.append(f"cached settings of {sid} differ from the stored ones")
    for uid, user in cache.users._data.items():
        if await adapter.load_user_prefs(uid) != user.prefs:
            problems.append(f"cached preferences of {uid} differ from the stored ones")
    return problems
