"""Opening stm the way a host would, with a few extra plugins, and seeding it.

The extra plugins are trivial on purpose (a gate that abstains, a macro, a
mention converter): they show what registered third-party plugins cost on the
hot path, which should be nothing once the facade has memoized them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple, cast

from bench import workload as w
from hookspecs import hookimpl
from stm_core._util.clock import ManualClock
from stm_core.models import Turn
from stm_core.settings import Settings
from stm_core.storage.protocol import StorageAdapter
from stm_core.storage.records import (
    CaptureWrite,
    CategoryRecord,
    MemoryKey,
    MemoryWrite,
)
from stm_core.store import Stm, open_store
from stm_plugins.sqlalchemy_storage.base import SqlStorageAdapter
from stm_plugins.sqlalchemy_storage.compiled import Compiled


def _everyone(text: str, turn: Turn) -> str:
    return text.replace("@everyone", "everyone") if "@everyone" in text else text


class AbstainingGate:
    @hookimpl
    def stm_tool_available(self, provider: str) -> bool | None:
        return None


class ExtraMacros:
    @hookimpl
    def stm_prompt_macros(self, provider: str) -> Mapping[str, str] | None:
        return {"bench_tool": "`bench_tool`"}


class EveryoneMentions:
    @hookimpl
    def stm_mention_converters(self) -> Iterable[Callable[[str, Turn], str]]:
        return [_everyone]


def extra_plugins() -> list[object]:
    return [AbstainingGate(), ExtraMacros(), EveryoneMentions()]


@asynccontextmanager
async def open_bench_store(url: str, clock: ManualClock, *,
                           settings: Settings | None = None) -> AsyncIterator[Stm]:
    async with open_store(url, settings=settings or Settings(), plugins=extra_plugins(),
                          load_entrypoints=False, clock=clock) as stm:
        yield stm


class CountingAdapter:
    """Wraps an adapter and counts every call that reaches the database."""

    def __init__(self, inner: StorageAdapter) -> None:
        self._inner = inner
        self.calls: dict[str, int] = {}

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return await target(*args, **kwargs)

        return counted


#: (jobs run inline, jobs run on the writer thread) of a SQLite store so far.
WriterJobs = tuple[int, int]


def writer_jobs(stm: Stm) -> WriterJobs:
    """What :func:`inline_share` counts from (zeros off SQLite)."""
    writer = getattr(stm.adapter, "writer", None)
    if writer is None:
        return 0, 0
    return writer.stats.inline_jobs, writer.stats.jobs


def inline_share(stm: Stm, since: WriterJobs = (0, 0)) -> float | None:
    """The share of the SQLite writer's jobs since ``since`` (a
    :func:`writer_jobs` reading) that ran on the caller's thread; ``None``
    when there were none (or off SQLite). The scenarios show which path
    they measured."""
    inline, queued = (now - before for now, before in zip(writer_jobs(stm), since,
                                                             strict=True))
    total = inline + queued
    return round(inline / total, 3) if total else None


def count_calls(stm: Stm) -> CountingAdapter:
    """Put a counting proxy between ``stm`` and its adapter."""
    proxy = CountingAdapter(stm.adapter)
    stm.adapter = cast(StorageAdapter, proxy)
    return proxy


async def seed_typical_server(stm: Stm, server: str, seeds: Sequence[w.ChannelSeed], *,
                              now_ms: int, render_mode: str) -> None:
    """Categories, render mode and each channel's row, written through the
    storage API at the channel's age; then the cache starts empty."""
    adapter = stm.adapter
    categories = [CategoryRecord(position=k, label=label, description=desc)
                  for k, (label, desc) in enumerate(
                      zip(w.CATEGORY_LABELS, w.CATEGORY_DESCRIPTIONS, strict=True))]
    await adapter.replace_categories(server, categories, now_ms=now_ms,
                                     clear_server_memories=False)
    await adapter.update_server_settings(server, {"render_mode": render_mode},
                                         now_ms=now_ms)
    for seed in seeds:
        at = now_ms - seed.age_minutes * w.MINUTE_MS
        key = MemoryKey.server(server, seed.channel_id, w.PERSONA_ID)
        await adapter.capture([CaptureWrite(key=key, messages=seed.messages, now_ms=at,
                                            counter_increment=seed.counter,
                                            persona_lineage_id=w.LINEAGE_ID)])
        await adapter.write_memory([MemoryWrite(
            key=key, now_ms=at, set_summary=seed.summary is not None, summary=seed.summary,
            set_categories=bool(seed.categories), categories=seed.categories,
            persona_lineage_id=w.LINEAGE_ID)])
    stm.engine.flush()


def compiled_capture(stm: Stm, rows: int) -> Compiled:
    """The capture statement stm compiled and ran (after at least one turn):
    ``("capture",)`` on SQLite, ``("capture", rows)`` as one statement on
    PostgreSQL. A floor runs this very text."""
    adapter = cast(SqlStorageAdapter, stm.adapter)
    key: tuple[object, ...] = ("capture", rows) if adapter.dialect_name == "postgresql" \
        else ("capture",)

    def missing() -> Any:
        raise RuntimeError(f"stm has not run its {key} statement yet")
    return adapter.statement(key, missing)


class ToolWriteSql(NamedTuple):
    """The statements of stm's tool write, as it compiled them: per scope the
    memory upsert, then the revision insert and the trim of old revisions."""

    upsert: Compiled
    revision_insert: Compiled
    revision_trim: Compiled


def compiled_tool_write(stm: Stm) -> ToolWriteSql:
    """The SQL stm ran for a summary tool write (after at least one call)."""
    adapter = cast(SqlStorageAdapter, stm.adapter)

    def missing() -> Any:
        raise RuntimeError("stm has not run its tool write yet")
    return ToolWriteSql(*(adapter.statement(key, missing)
                          for key in (("write",), "revision_insert", "revision_trim")))
