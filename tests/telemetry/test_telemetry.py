"""Spans and metrics reach an OpenTelemetry SDK, and cost nothing without one.

The SDK's in-memory span exporter and metric reader stand in for a host's
exporters; the store runs on real SQLite (and PostgreSQL for the listener).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stm_core._util import telemetry
from stm_core.models import HistoryMessage, PersonaResponse, Turn
from stm_core.settings import Settings
from stm_core.storage.records import MemoryKey, MemoryWrite
from tests.conftest import OpenStm, asyncpg_dsn, postgres_base_url

SERVER = "g1"


class Collected:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        telemetry.configure(tracer_provider=tracer_provider, meter_provider=self.meter_provider)

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], float]]]:
        data = self.reader.get_metrics_data()
        out: dict[str, list[tuple[dict[str, Any], float]]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out[metric.name] = [(dict(p.attributes or {}), p.value)
                                        for p in metric.data.data_points]  # type: ignore[union-attr]
        return out

    def value(self, name: str, **attributes: Any) -> float:
        return sum(v for a, v in self.metrics().get(name, []) if a == attributes)


@pytest.fixture
def collected() -> Iterator[Collected]:
    c = Collected()
    yield c
    telemetry.configure()  # back to the global (no-op) providers


def turn(channel: str = "c1") -> Turn:
    return Turn(user_id="u1", channel_id=channel, server_id=SERVER, persona_id="p1",
                provider="openai")


HISTORY = [HistoryMessage(author_type="user", content="where do we go?", speaker_name="Ann")]
REPLY = [PersonaResponse(content="north", persona_name="Bot", persona_id="p1")]


async def test_turn_spans_carry_their_attributes(tmp_path: Path, open_stm: OpenStm,
                                                 collected: Collected) -> None:
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        await stm.record_turn(turn(), HISTORY, REPLY)
        await stm.build_context(turn("c2"))  # loads: a cache miss
        await stm.build_context(turn("c2"))  # warm
        ok = await stm.apply_tool_call(turn(), {"summary": "heading north"})
        bad = await stm.apply_tool_call(turn(), {"summary": ""})
    assert ok.ok and not bad.ok and bad.code

    (record,) = collected.named("stm.record_turn")
    assert record.attributes is not None
    assert record.attributes["stm.server"] == SERVER
    assert record.attributes["stm.recorded"] is True
    assert record.attributes["stm.items"] == 2
    writes = [s for s in collected.named("stm.storage.write")
              if s.parent is not None and s.parent.span_id == record.context.span_id]
    assert [w.attributes["stm.storage.operation"] for w in writes] == ["capture"]  # type: ignore[index]
    assert writes[0].attributes["db.system.name"] == "sqlite"  # type: ignore[index]

    cold, warm = collected.named("stm.build_context")
    assert cold.attributes["stm.cache_hit"] is False  # type: ignore[index]
    assert warm.attributes["stm.cache_hit"] is True  # type: ignore[index]
    assert warm.attributes["stm.items"] >= 1  # type: ignore[index,operator]
    assert warm.attributes["stm.mode"] == "crude_summary"  # type: ignore[index]
    assert isinstance(warm.attributes["stm.nudge"], bool)  # type: ignore[index]

    tool_ok, tool_bad = collected.named("stm.apply_tool_call")
    assert tool_ok.attributes["stm.ok"] is True  # type: ignore[index]
    assert tool_bad.attributes["stm.code"] == bad.code  # type: ignore[index]


async def test_counters_follow_what_happened(tmp_path: Path, open_stm: OpenStm,
                                             collected: Collected) -> None:
    before_hits = collected.value("stm.cache.hits", **{"stm.cache.view": "server"})
    before_ok = collected.value("stm.tool_calls", **{"stm.tool.ok": True, "stm.tool.code": "ok"})
    before_rows = collected.value("stm.janitor.rows_deleted")
    before_nudges = collected.value("stm.nudges.shown")
    settings = Settings()
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}", settings=settings) as stm:
        await stm.adapter.update_server_settings(SERVER, {"refresh_cadence": 1},
                                                 now_ms=stm.clock.now_ms())
        await stm.record_turn(turn(), HISTORY, REPLY)
        await stm.record_turn(turn(), HISTORY, REPLY)
        context = await stm.build_context(turn())
        await stm.build_context(turn())
        await stm.apply_tool_call(turn(), {"summary": "north"})
        await stm.apply_tool_call(turn(), {"summary": ""})
        stm.clock.advance(ms=settings.retention_ms + 1)  # type: ignore[attr-defined]
        deleted = await stm.janitor.run_once()
    assert deleted >= 2
    assert collected.value("stm.cache.hits", **{"stm.cache.view": "server"}) > before_hits
    assert collected.value("stm.tool_calls",
                           **{"stm.tool.ok": True, "stm.tool.code": "ok"}) == before_ok + 1
    failed = [v for a, v in collected.metrics()["stm.tool_calls"] if a["stm.tool.ok"] is False]
    assert sum(failed) >= 1
    assert collected.value("stm.janitor.rows_deleted") == before_rows + deleted
    shown = 2 if context.nudge_item is not None else 0
    assert collected.value("stm.nudges.shown") == before_nudges + shown
    (run,) = collected.named("stm.janitor.run")
    assert run.attributes["stm.rows_deleted"] == deleted  # type: ignore[index]


async def test_a_failing_storage_call_marks_its_span(tmp_path: Path, open_stm: OpenStm,
                                                     collected: Collected) -> None:
    async with open_stm(f"sqlite:///{tmp_path / 'stm.db'}") as stm:
        adapter = stm.adapter
    with pytest.raises(Exception):  # noqa: B017 - closed adapters raise StorageError
        await adapter.write_memory([MemoryWrite(key=MemoryKey.server(SERVER, "c1", None),
                                                now_ms=1, set_summary=True, summary="x")])
    (span,) = collected.named("stm.storage.write")
    assert not span.status.is_ok
    assert span.attributes["stm.storage.operation"] == "write_memory"  # type: ignore[index]


@pytest.mark.postgres
async def test_listener_reconnects_and_staleness_are_reported(pg_url: str, open_stm: OpenStm,
                                                              collected: Collected) -> None:
    before = collected.value("stm.listener.reconnects")
    async with open_stm(pg_url) as stm:
        listener = stm.listener
        assert listener is not None
        await listener.wait_connected(10)
        assert collected.value("stm.listener.disconnected") == 0
        listening = stm.settings.cache_max_age_ms(listening=True)
        assert listening is not None
        assert collected.value("stm.listener.staleness_bound") == listening / 1000
        pid = listener.subscription.backend_pid  # type: ignore[union-attr]
        base = postgres_base_url()
        assert base is not None
        conn = await asyncpg.connect(asyncpg_dsn(base))
        try:
            assert await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await conn.close()
        for _ in range(200):
            if listener.stats.connects >= 2:
                break
            await asyncio.sleep(0.05)
        assert listener.stats.connects >= 2
    assert collected.value("stm.listener.reconnects") == before + 1
    # A closed store's listener is not reported as disconnected.
    assert collected.value("stm.listener.disconnected") == 0


def test_without_an_sdk_stm_never_imports_opentelemetry(tmp_path: Path) -> None:
    code = f"""
import asyncio, sys
from stm_core._util import telemetry
from stm_core.models import Turn, HistoryMessage, PersonaResponse
from stm_core.store import open_store

async def main():
    async with open_store("sqlite:///{tmp_path / 'x.db'}", load_entrypoints=False) as stm:
        t = Turn(user_id="u", channel_id="c", server_id="g", persona_id="p")
        await stm.record_turn(t, [HistoryMessage(author_type="user", content="hi")],
                              [PersonaResponse(content="yo", persona_name="B", persona_id="p")])
        await stm.build_context(t)
        await stm.apply_tool_call(t, {{"summary": "s"}})
        await stm.janitor.run_once()
        with telemetry.span("x") as span:
            assert span is None

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_with_the_api_but_no_sdk_spans_stay_off() -> None:
    import opentelemetry.trace  # noqa: F401 - the host imported the API, set no provider

    with telemetry.span("stm.build_context") as span:
        assert span is None
