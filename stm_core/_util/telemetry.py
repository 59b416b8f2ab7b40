"""OpenTelemetry spans and metrics of stm, free when nobody collects them.

stm speaks the OpenTelemetry API (the ``opentelemetry-api`` package, extra
``otel``); the host installs and configures an SDK, or not. Until a real
tracer provider is set, :func:`span` hands out one shared no-op context
manager: no OpenTelemetry call, no attribute dictionary, and OpenTelemetry is
not even imported unless the host imported it. Metrics are plain integers
counted in this module and read by observable instruments when the SDK
collects, so a counted event costs one integer increment either way.

Spans and instruments are listed in ``docs/telemetry.md``.
"""

from __future__ import annotations

import os
import sys
import time
import weakref
from collections import Counter
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
    from opentelemetry.trace import Span, Tracer, TracerProvider

#: The instrumentation scope of every span and instrument.
SCOPE = "stm"

# A provider can only have been set by a host that imported OpenTelemetry (or
# named one in these variables, which OpenTelemetry then loads): until then
# stm does not pay for importing it.
_modules = sys.modules
_TRACE_MODULE = "opentelemetry.trace"
_METRICS_MODULE = "opentelemetry.metrics"
_METER_ENV = "OTEL_PYTHON_METER_PROVIDER"
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ

_NO_SPAN: AbstractContextManager[None] = nullcontext()
_monotonic = time.monotonic
#: A provider set after stm found none is picked up within this many seconds.
RECHECK_S = 1.0


class _Counts:
    """Everything the metrics report, counted since the process started."""

    def __init__(self) -> None:
        # One plain integer per cached view kind: the cheapest thing to bump.
        self.settings_hits = self.settings_misses = 0
        self.server_hits = self.server_misses = 0
        self.user_hits = self.user_misses = 0
        self.nudges_shown = 0
        self.tool_calls: Counter[tuple[bool, str]] = Counter()
        self.janitor_rows = 0
        self.janitor_runs = 0
        self.listener_reconnects = 0


#: The process-wide counts (read them in tests and dashboards of your own).
counts = _Counts()


class _Listener(Protocol):
    @property
    def connected(self) -> bool: ...

    def staleness_bound_s(self) -> float | None: ...


_listeners: weakref.WeakSet[Any] = weakref.WeakSet()


class _State:
    tracer: Tracer | None = None
    #: A provider given to :func:`configure` instead of the global one.
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    metrics_registered = False
    #: When to look for a tracer provider again (OpenTelemetry imported, none set).
    recheck_at = 0.0


_state = _State()


def tracer() -> Tracer | None:
    """The tracer to use, or ``None`` when nobody collects spans.

    Hot paths test this first and run their plain code when it is ``None``.
    """
    found = _state.tracer
    if found is None:
        # The usual case, kept to two dictionary lookups: no OpenTelemetry
        # imported by anyone, so no provider can have been set.
        if _TRACE_MODULE not in _modules and not _PROVIDER_FROM_ENV:
            if not _state.metrics_registered and _METRICS_MODULE in _modules:
                register_metrics()
            return None
        # OpenTelemetry is imported (perhaps by another library) but may have no
        # SDK: asking it costs microseconds, so ask at most once a second.
        now = _monotonic()
        if now < _state.recheck_at:
            return None
        _state.recheck_at = now + RECHECK_S
        found = _resolve_tracer()
    return found


def span(name: str) -> AbstractContextManager[Span | None]:
    """A span named ``name`` as the current one, or ``None`` when not tracing.

    Set attributes on the span only when it is not ``None``, so their values
    are not even computed when nobody traces.
    """
    found = tracer()
    if found is None:
        return _NO_SPAN
    return found.start_as_current_span(name)


def _resolve_tracer() -> Tracer | None:
    if not _state.metrics_registered:
        register_metrics()
    provider = _state.tracer_provider
    if provider is None:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            return None  # no SDK configured (yet): OpenTelemetry would do nothing
    # A global provider is set once and for all: keep its tracer.
    _state.tracer = provider.get_tracer(SCOPE, _version())
    return _state.tracer


def configure(*, tracer_provider: TracerProvider | None = None,
              meter_provider: MeterProvider | None = None) -> None:
    """Report to these providers instead of OpenTelemetry's global ones.

    For hosts (and tests) that keep their own providers; ``None`` for both goes
    back to the global providers.
    """
    _state.tracer_provider = tracer_provider
    _state.meter_provider = meter_provider
    _state.tracer = (None if tracer_provider is None
                     else tracer_provider.get_tracer(SCOPE, _version()))
    _state.metrics_registered = False
    _state.recheck_at = 0.0
    register_metrics()


def register_metrics() -> bool:
    """Register stm's observable instruments once OpenTelemetry is in use.

    Called when a store opens and whenever a span is asked for; cheap until
    the host imports OpenTelemetry. Returns whether they are registered.
    """
    if _state.metrics_registered:
        return True
    if _state.meter_provider is not None:
        meter = _state.meter_provider.get_meter(SCOPE, _version())
    elif _METRICS_MODULE in _modules or _METER_ENV in os.environ:
        from opentelemetry import metrics

        # Instruments of the proxy meter start reporting once an SDK is set.
        meter = metrics.get_meter(SCOPE, _version())
    else:
        return False
    _create_instruments(meter)
    _state.metrics_registered = True
    return True


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("stm-core")
    except metadata.PackageNotFoundError:
        return ""


def _create_instruments(meter: Meter) -> None:
    from opentelemetry.metrics import Observation

    def per_view(outcome: str) -> Iterable[Observation]:
        return [Observation(getattr(counts, f"{view}_{outcome}"), {"stm.cache.view": view})
                for view in ("settings", "server", "user")]

    def one(value: int) -> Iterable[Observation]:
        return [Observation(value)]

    def tool_calls(_: CallbackOptions) -> Iterable[Observation]:
        return [Observation(n, {"stm.tool.ok": ok, "stm.tool.code": code})
                for (ok, code), n in counts.tool_calls.items()]

    def connected(_: CallbackOptions) -> Iterable[Observation]:
        return [Observation(sum(1 for x in _listeners if not x.connected))]

    def staleness(_: CallbackOptions) -> Iterable[Observation]:
        bounds = [b for x in _listeners if (b := x.staleness_bound_s()) is not None]
        return [Observation(max(bounds))] if bounds else []

    meter.create_observable_counter(
        "stm.cache.hits", [lambda _: per_view("hits")], unit="{lookup}",
        description="Cached views served without a database read")
    meter.create_observable_counter(
        "stm.cache.misses", [lambda _: per_view("misses")], unit="{lookup}",
        description="Views loaded from the database")
    meter.create_observable_counter(
        "stm.nudges.shown", [lambda _: one(counts.nudges_shown)], unit="{nudge}",
        description="Built contexts that carried the update nudge")
    meter.create_observable_counter(
        "stm.tool_calls", [tool_calls], unit="{call}",
        description="apply_tool_call results, by outcome and code")
    meter.create_observable_counter(
        "stm.janitor.rows_deleted", [lambda _: one(counts.janitor_rows)], unit="{row}",
        description="Memory rows the janitor deleted")
    meter.create_observable_counter(
        "stm.janitor.runs", [lambda _: one(counts.janitor_runs)], unit="{run}",
        description="Finished janitor runs")
    meter.create_observable_counter(
        "stm.listener.reconnects", [lambda _: one(counts.listener_reconnects)],
        unit="{connection}",
        description="Times a change listener listened again after losing its connection")
    meter.create_observable_gauge(
        "stm.listener.disconnected", [connected], unit="{listener}",
        description="Change listeners not listening now (their stores serve bounded-age views)")
    meter.create_observable_gauge(
        "stm.listener.staleness_bound", [staleness], unit="s",
        description="Longest a cached view may now lag another process's write")


def watch_listener(listener: _Listener) -> None:
    """Report ``listener`` in the listener gauges until it stops."""
    _listeners.add(listener)


def unwatch_listener(listener: _Listener) -> None:
    """A stopped listener (its store closed) is no longer reported."""
    _listeners.discard(listener)


def tool_call(ok: bool, code: str | None) -> None:
    counts.tool_calls[(ok, code or ("ok" if ok else "error"))] += 1
