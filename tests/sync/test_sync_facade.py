"""The synchronous facade behaves as the async API does: same results, same
errors, from one thread, from many threads at once, and from several processes."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import pytest

from stm_core import (
    HistoryMessage,
    ManualClock,
    PersonaResponse,
    Settings,
    StmError,
    StoreClosed,
    SyncStm,
    Turn,
    ValidationError,
    open_store,
    open_store_sync,
)
from stm_core.storage.records import MemoryKey

LIVE = MemoryKey.server("g1", "c1", "p1")


def turn(**kwargs: Any) -> Turn:
    values: dict[str, Any] = {"user_id": "u1", "channel_id": "c1", "server_id": "g1",
                              "persona_id": "p1", "persona_lineage_id": "L1",
                              "bot_name": "Tomori", "triggerer_name": "Alice",
                              "provider": "openai"}
    values.update(kwargs)
    return Turn(**values)


def said(text: str) -> list[HistoryMessage]:
    return [HistoryMessage(author_type="user", content=text, speaker_name="Alice")]


REPLY = [PersonaResponse(content="noted", persona_name="Tomori", persona_id="p1")]


def open_sync(url: str, **kwargs: Any) -> Any:
    kwargs.setdefault("load_entrypoints", False)
    kwargs.setdefault("settings", Settings())
    kwargs.setdefault("clock", ManualClock())
    return open_store_sync(url, **kwargs)


def a_whole_turn(stm: SyncStm, channel: str = "c1") -> dict[str, Any]:
    """One host turn through the facade; what each call answered."""
    t = turn(channel_id=channel)
    ctx = stm.build_context(t)
    schema = stm.tool_schema(t)
    applied = stm.apply_tool_call(t, json.dumps({"summary": f"talked in {channel}"}))
    recorded = stm.record_window(t, said("hello"), REPLY)
    return {"items": len(ctx.memory_items), "schema": schema, "ok": applied.ok,
            "counters": dict(recorded.counters)}


def test_a_whole_cycle_matches_the_async_api(backend_url: str) -> None:
    with open_sync(backend_url) as stm:
        first = a_whole_turn(stm, "c2")
        second = a_whole_turn(stm)
        assert first["schema"] == second["schema"] == stm.tool_schema(turn(provider="openai"))
        assert (first["ok"], second["ok"]) == (True, True)
        assert second["items"] == 1  # c2's summary, seen from c1
        assert second["counters"] == {"p1": 1}
        context = stm.build_context(turn(channel_id="c3"))
        assert "talked in c1" in context.memory_items[0].text
        row = stm.run(stm.store.adapter.get_memory(LIVE))
        assert row is not None and row.summary == "talked in c1"
        params = stm.admin.set_server_params("g1", refresh_cadence=3)
        assert params.refresh_cadence == 3 == stm.admin.server_params("g1").refresh_cadence


def test_errors_are_the_async_apis(backend_url: str) -> None:
    with open_sync(backend_url) as stm:
        with pytest.raises(ValidationError, match="refresh_cadence"):
            stm.admin.set_server_params("g1", refresh_cadence=1000)
        with pytest.raises(ValidationError):
            stm.tool_schema(turn(), "no-such-format")
        hostile = stm.apply_tool_call(turn(), '{"summary": ')  # broken JSON from a model
        assert not hostile.ok and hostile.code is not None
        assert not stm.apply_tool_call(turn(), {"summary": 42}).ok  # type: ignore[dict-item]
        with pytest.raises(AttributeError, match="_engine"):
            stm.admin._engine  # noqa: B018 - a private attribute is no admin call
    with pytest.raises(StoreClosed):
        stm.build_context(turn())


def test_a_call_from_inside_its_own_loop_is_refused() -> None:
    with open_sync("memory://") as stm:
        async def nested() -> Any:
            return stm.build_context(turn())

        with pytest.raises(StmError, match="inside its own event loop"):
            stm.run(nested())
        assert stm.build_context(turn()).memory_items == ()  # still usable


def test_a_bad_url_fails_to_open_and_leaves_no_thread() -> None:
    before = threading.active_count()
    with pytest.raises(StmError, match="no storage adapter"), open_sync("nosuch://x"):
        pass
    assert threading.active_count() == before


def test_many_threads_at_once(backend_url: str) -> None:
    threads, turns = 8, 5
    with open_sync(backend_url) as stm:
        def worker(n: int) -> list[int]:
            counters = []
            for i in range(turns):
                stm.build_context(turn())
                counters.append(stm.record_window(turn(), said(f"t{n}-{i}"),
                                                  REPLY).counters["p1"])
            return counters

        with ThreadPoolExecutor(threads) as pool:
            seen = [c for counters in pool.map(worker, range(threads)) for c in counters]
        # Every increment happened once, in the database: each value seen once.
        assert sorted(seen) == list(range(1, threads * turns + 1))
        row = stm.run(stm.store.adapter.get_memory(LIVE))
        assert row is not None and row.turns_since_refresh == threads * turns


def _turns_in_child(url: str, turns: int) -> int:
    with open_store_sync(url, load_entrypoints=False, listen_for_changes=False) as stm:
        for i in range(turns):
            stm.record_window(turn(), said(f"m{i}"), REPLY)
    return turns


def test_several_processes(db_url: str) -> None:
    async def setup() -> None:
        async with open_store(db_url, load_entrypoints=False):
            pass

    import asyncio
    asyncio.run(setup())
    with ProcessPoolExecutor(3) as pool:
        done = sum(pool.map(_turns_in_child, [db_url] * 3, [4] * 3))
    with open_sync(db_url) as stm:
        row = stm.run(stm.store.adapter.get_memory(LIVE))
    assert row is not None and row.turns_since_refresh == done == 12
