"""Turning one run's numbers into ``results.json``, ``RESULTS.md`` and ``scale.png``.

Every figure in the Markdown comes from the JSON of the same run; nothing here
is written by hand.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sqlite3
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from bench.config import RunConfig

log = logging.getLogger("stm.bench")

#: Headline keys every results.json carries (``None`` when a scenario could not run).
HEADLINE_KEYS = ("build_ratio", "record_ratio", "record_ratio_sqlite", "record_ratio_postgres",
                 "concurrent_throughput_ratio", "vs_langgraph_saver", "vs_openai_session",
                 "bytes_per_turn", "scale_ratio", "janitor_writer_p99_ms",
                 "db_calls_per_warm_build")


@attrs.frozen(kw_only=True)
class Target:
    key: str
    text: str
    source: str
    check: Callable[[float], bool]


TARGETS = (
    Target(key="build_ratio", text="≤ 3", source="performance issue",
           check=lambda v: v <= 3),
    Target(key="build_ratio", text="≤ 5", source="core issue", check=lambda v: v <= 5),
    Target(key="db_calls_per_warm_build", text="= 0", source="core issue",
           check=lambda v: v == 0),
    Target(key="record_ratio", text="≤ 1.3", source="performance issue",
           check=lambda v: v <= 1.3),
    Target(key="record_ratio", text="≤ 2", source="core issue", check=lambda v: v <= 2),
    Target(key="record_ratio_postgres", text="≤ 2", source="same bar as SQLite",
           check=lambda v: v <= 2),
    Target(key="tool_write_ratio_sqlite", text="≤ 2", source="same bar as record_turn",
           check=lambda v: v <= 2),
    Target(key="concurrent_throughput_ratio", text="> 1", source="performance issue",
           check=lambda v: v > 1),
    Target(key="vs_langgraph_saver", text="> 1", source="performance issue (ahead of peers)",
           check=lambda v: v > 1),
    Target(key="vs_openai_session", text="> 1", source="performance issue (ahead of peers)",
           check=lambda v: v > 1),
    Target(key="bytes_per_turn", text="≈ 0 (≤ 64 B)",
           source="performance issue (bounded by channels)", check=lambda v: v <= 64),
    Target(key="scale_ratio", text="≤ 1.5 (flat)", source="performance issue (flat as data "
           "grows)", check=lambda v: v <= 1.5),
    Target(key="janitor_writer_p99_ms", text="< 10 ms", source="performance issue",
           check=lambda v: v < 10),
)


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for target in TARGETS:
        value = results.get(target.key)
        met: bool | None = None if value is None else target.check(float(value))
        if target.key == "build_ratio" and results.get("build_texts_equal") is False:
            met = False  # a ratio against a floor that renders other text proves nothing
        out.append({"metric": target.key, "value": value, "target": target.text,
                    "met": met, "source": target.source})
    cache = results.get("cache_bound")
    if cache is not None:
        out.append({"metric": "cache_bound", "value": cache.get("rss_growth_kb"),
                    "target": "LRU sizes within the bound; RSS flat (< 16 MB growth)",
                    "met": bool(cache.get("within_bound"))
                    and cache.get("rss_growth_kb", 1 << 30) < 16_384,
                    "source": "performance issue"})
    return out


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def load_average() -> float | None:
    """1-minute load average: other work on the machine shows in p99s."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def meta(cfg: RunConfig, seconds: float, load_at_start: float | None) -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": cfg.name, "quick": cfg.quick, "rounds": cfg.rounds,
        "turns_per_round": cfg.turns, "build_turns_per_round": cfg.build_turns,
        "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(), "machine": platform.machine(),
        "versions": {d: _version(d) for d in ("SQLAlchemy", "aiosqlite", "asyncpg", "pluggy",
                                              "langgraph", "langgraph-checkpoint-sqlite",
                                              "openai-agents")},
        "postgres": bool(cfg.postgres_url), "wall_seconds": round(seconds, 1),
        "cpus": os.cpu_count(), "load_average_start": load_at_start,
        "load_average_end": load_average(),
    }


def write_json(results: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _met(met: bool | None) -> str:
    return {True: "✅ met", False: "❌ missed", None: "– not run"}[met]


_FLAGS = {"full": "", "quick": " --quick", "tiny": " --tiny"}


def markdown(results: dict[str, Any]) -> str:
    m = results["meta"]
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `python -m bench{_FLAGS[m['mode']]}` on {m['date']} "
        f"({m['mode']} run, {m['rounds']} interleaved rounds, Python {m['python']}, "
        f"SQLite {m['sqlite']}, {m['platform']}, {m['cpus']} CPUs, load average "
        f"{_fmt(m['load_average_start'])} → {_fmt(m['load_average_end'])}). Ratios compare "
        "scenarios of this same run, interleaved in blocks of 25 turns; absolute times "
        "and tails (p99) depend on the machine and on what else it runs.",
        "",
        "## Targets",
        "",
        "| metric | value | target | status | from |",
        "|---|---:|---|---|---|",
    ]
    for t in results["targets"]:
        lines.append(f"| `{t['metric']}` | {_fmt(t['value'])} | {t['target']} | "
                     f"{_met(t['met'])} | {t['source']} |")
    skipped = results.get("record_ratio_postgres_skipped")
    if skipped:
        lines += ["", f"PostgreSQL: skipped ({skipped})."]
    if results.get("peers_unavailable"):
        for peer, reason in results["peers_unavailable"].items():
            lines.append(f"Peer {peer} unavailable: {reason}")
    lines += ["", "## Per-turn timings (µs)", "",
              "| scenario | n | median | p95 | p99 | round medians |",
              "|---|---:|---:|---:|---:|---|"]
    for name, s in results["scenarios"].items():
        rounds = ", ".join(_fmt(r) for r in s.get("round_medians_us", []))
        lines.append(f"| {name} | {s['n']:,} | {_fmt(s['median_us'])} | {_fmt(s['p95_us'])} | "
                     f"{_fmt(s['p99_us'])} | {rounds} |")
    lines += _build_section(results) + _growth_section(results) + _scale_section(results)
    lines += _janitor_section(results) + _cache_section(results) + _concurrency_section(results)
    if results.get("errors"):
        lines += ["", "## Scenarios that failed", ""]
        lines += [f"- `{k}`: {v}" for k, v in results["errors"].items()]
    return "\n".join(lines) + "\n"


def _build_section(r: dict[str, Any]) -> list[str]:
    texts = r.get("build_texts")
    if not texts:
        return []
    out = ["", "## Context build", "",
           "A warm `build_context` of a typical server (3 other channels with summaries and "
           "10 messages, 5 categories, nudge due, 3 extra plugins) against a hand-written "
           "function producing the same texts.", "",
           "| render mode | ratio | texts equal | items | chars |", "|---|---:|---|---:|---:|"]
    for mode, check in texts.items():
        out.append(f"| {mode} | {_fmt(r['build_ratio_by_mode'].get(mode))} | "
                   f"{_fmt(check['texts_equal'])} | {check['items']} | {check['chars']:,} |")
    for mode, check in texts.items():
        if "difference" in check:
            d = check["difference"]
            out += ["", f"Texts differ in {mode} mode at char {d['at_char']}:", "",
                    "```", f"stm:  {d['stm']}", f"hand: {d['hand_written']}", "```"]
    out += ["", f"Database calls during the timed warm builds: "
                f"{_fmt(r.get('db_calls_per_warm_build'))} per build."]
    return out


def _growth_section(r: dict[str, Any]) -> list[str]:
    growth = r.get("bytes_per_turn_all")
    if not growth:
        return []
    out = ["", "## Database growth per turn (after warm-up, WAL checkpointed)", "",
           "| store | bytes per turn |", "|---|---:|"]
    out += [f"| {k} | {_fmt(v)} |" for k, v in growth.items()]
    return out


def _scale_section(r: dict[str, Any]) -> list[str]:
    scale = r.get("scale")
    if not scale:
        return []
    out = ["", "## Scale (µs per turn)", "",
           f"Rows spread over servers of {scale['channels_per_server']} channels, one database "
           "per size, all measured interleaved after a restart. *stm turn* = `record_turn` + "
           "`build_context`; *raw record* = the two capture upserts on raw aiosqlite on the "
           "same file. See `scale.png`.", "",
           "| rows | stm turn median | stm turn p99 | cold first turn median | "
           "raw record median | db MB |",
           "|---:|---:|---:|---:|---:|---:|"]
    for p in scale["points"]:
        out.append(f"| {p['rows']:,} | {_fmt(p['warm']['median_us'])} | "
                   f"{_fmt(p['warm']['p99_us'])} | {_fmt(p['cold_first_turn']['median_us'])} | "
                   f"{_fmt(p['raw_record']['median_us'])} | {p['db_bytes'] / 1e6:,.1f} |")
    out += ["", f"Growth largest/smallest: stm turn {_fmt(r.get('scale_ratio'))}×, cold "
                f"first turn {_fmt(r.get('scale_cold_ratio'))}×, raw record "
                f"{_fmt(r.get('scale_raw_ratio'))}×."]
    return out


def _janitor_section(r: dict[str, Any]) -> list[str]:
    j = r.get("janitor")
    if not j:
        return []
    out = ["", "## Janitor under load", "",
           f"A backlog of {j['backlog_rows']:,} stale rows purged by `janitor.run_once()` "
           f"(batches of {j['batch_size']:,}, {j['pause_ms']} ms pause) while a writer "
           "records a turn about every 2 ms. *Ordered*: the stale rows are the oldest "
           "inserted; *scattered*: they are spread over the whole table. *Writer alone*: "
           "the same writer just before, without the janitor (the machine's own tail).", "",
           "| backlog | janitor wall s | writer turns | writer p50 ms | writer p99 ms | "
           "writer max ms | writer alone p99 / max ms | rows before → after |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for shape, s in j.get("by_backlog_shape", {"": j}).items():
        out.append(f"| {shape} | {_fmt(s['janitor_wall_s'])} | {s['writer_turns']:,} | "
                   f"{_fmt(s['writer_p50_ms'])} | {_fmt(s['writer_p99_ms'])} | "
                   f"{_fmt(s['writer_max_ms'])} | {_fmt(s['writer_alone_p99_ms'])} / "
                   f"{_fmt(s['writer_alone_max_ms'])} | {s['rows_before']:,} → "
                   f"{s['rows_after']:,} |")
    return out


def _cache_section(r: dict[str, Any]) -> list[str]:
    c = r.get("cache_bound")
    if not c:
        return []
    return ["", "## Cache bound", "",
            f"Cache bound {c['bound']:,} servers and users; {c['servers_touched']:,} servers "
            f"(each with its own user) touched. RSS after filling the cache "
            f"{c['after_filling_cache_kb']:,} KB, after touching all "
            f"{c['after_touching_all_kb']:,} KB (growth {c['rss_growth_kb']:,} KB). "
            f"Cache sizes after: {c['cache_sizes_after']}."]


def _concurrency_section(r: dict[str, Any]) -> list[str]:
    c = r.get("concurrent")
    if not c:
        return []
    return ["", "## Concurrency", "",
            f"{c['tasks']} channels × {c['turns_per_task']} turns written concurrently "
            f"through stm: {_fmt(c['stm_turns_per_s'])} turns/s; raw aiosqlite committing "
            f"each turn alone, sequentially: {_fmt(c['raw_sequential_turns_per_s'])} turns/s "
            f"(median of {c['runs']} runs)."]


def plot_scale(results: dict[str, Any], path: Path) -> bool:
    """Per-turn cost against rows (log x). Returns False when there is nothing to plot."""
    scale = results.get("scale")
    if not scale:
        return False
    try:
        import matplotlib
    except ImportError:
        log.warning("matplotlib is not installed (pip install -e '.[bench]'); no scale.png")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = scale["points"]
    rows = [p["rows"] for p in points]
    fig, (medians, tails) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110)
    medians.plot(rows, [p["warm"]["median_us"] for p in points], "o-", color="C0",
                 label="stm turn (warm)")
    medians.plot(rows, [p["cold_first_turn"]["median_us"] for p in points], "^-", color="C1",
                 label="stm first turn after restart")
    medians.plot(rows, [p["raw_record"]["median_us"] for p in points], "d:", color="C2",
                 label="raw aiosqlite upserts only")
    medians.set_title("median")
    tails.plot(rows, [p["warm"]["p99_us"] for p in points], "o-", color="C0",
               label="stm turn (warm)")
    tails.plot(rows, [p["raw_record"]["p99_us"] for p in points], "d:", color="C2",
               label="raw aiosqlite upserts only")
    tails.set_title("p99")
    for ax in (medians, tails):
        ax.set_xscale("log")
        ax.set_xlabel("memory rows in the database")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    medians.set_ylabel("µs per turn (record_turn + build_context)")
    fig.suptitle(f"stm on SQLite: per-turn cost as data grows ({results['meta']['mode']} run)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
