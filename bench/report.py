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
from bench.scenarios_server_mix import MIXES as SERVER_MIXES

log = logging.getLogger("stm.bench")

#: Headline keys every results.json carries (``None`` when a scenario could not run).
HEADLINE_KEYS = ("build_ratio", "record_ratio", "record_ratio_sqlite", "turn_ratio_sqlite",
                 "record_ratio_postgres", "concurrent_throughput_ratio", "vs_langgraph_saver",
                 "vs_openai_session", "server_scale_ratio", "cpu_us_per_turn",
                 "bytes_per_turn", "scale_ratio", "janitor_writer_p99_ms",
                 "db_calls_per_warm_build", "cli_startup_ms",
                 "telemetry_overhead")

#: The same comparison in CPU time per turn, next to each wall-time ratio.
CPU_KEYS = {"record_ratio_sqlite": "record_cpu_ratio_sqlite",
            "turn_ratio_sqlite": "turn_cpu_ratio_sqlite",
            "record_ratio_sqlite_inline": "record_cpu_ratio_sqlite_inline",
            "turn_ratio_sqlite_inline": "turn_cpu_ratio_sqlite_inline",
            "tool_write_ratio_sqlite_inline": "tool_write_cpu_ratio_sqlite_inline",
            "record_ratio_postgres": "record_cpu_ratio_postgres",
            "record_ratio_postgres_no_notice": "record_cpu_ratio_postgres_no_notice",
            "build_ratio": "build_cpu_ratio",
            "vs_openai_session": "vs_openai_session_cpu",
            "vs_langgraph_saver": "vs_langgraph_saver_cpu",
            "vs_langgraph_postgres_saver": "vs_langgraph_postgres_saver_cpu",
            "server_scale_ratio": "server_scale_cpu_ratio",
            "concurrent_throughput_ratio": "concurrent_cpu_ratio",
            "concurrent_throughput_ratio_best": "concurrent_cpu_ratio_best",
            "telemetry_overhead": "telemetry_overhead_cpu",
            "telemetry_build_overhead": "telemetry_build_overhead_cpu",
            "cli_startup_ms": "cli_startup_cpu_ms",
            "tool_write_ratio_sqlite": "tool_write_cpu_ratio_sqlite",
            "busy_loop_turn_ratio": "busy_loop_turn_cpu_ratio",
            "cold_first_build_sqlite": "cold_first_build_sqlite_cpu_ratio",
            "cold_first_build_postgres": "cold_first_build_postgres_cpu_ratio",
            "cold_wake_p99_ratio": "cold_wake_cpu_ratio"}


@attrs.frozen(kw_only=True)
class Target:
    key: str
    text: str
    source: str
    check: Callable[[float], bool]


_ISSUE = "performance issue (strongest floors)"
_INLINE = "the same bar against the inline floor"
_MIX = "server mix issue"
_RESTART = "restart issue"
TARGETS = (
    Target(key="record_ratio_sqlite", text="≤ 1.3", source=_ISSUE, check=lambda v: v <= 1.3),
    Target(key="turn_ratio_sqlite", text="≤ 1.5", source=_ISSUE, check=lambda v: v <= 1.5),
    Target(key="record_ratio_sqlite_inline", text="≤ 1.3", source=_INLINE,
           check=lambda v: v <= 1.3),
    Target(key="turn_ratio_sqlite_inline", text="≤ 1.5", source=_INLINE,
           check=lambda v: v <= 1.5),
    Target(key="record_ratio_postgres", text="≤ 1.3", source=_ISSUE,
           check=lambda v: v <= 1.3),
    Target(key="busy_loop_turn_ratio", text="≤ 1.5", source=_MIX, check=lambda v: v <= 1.5),
    Target(key="build_ratio", text="≤ 1.5", source=_ISSUE, check=lambda v: v <= 1.5),
    Target(key="concurrent_throughput_ratio", text="≥ 0.8", source=_ISSUE,
           check=lambda v: v >= 0.8),
    Target(key="concurrent_throughput_ratio_best", text="≥ 0.8", source=_MIX,
           check=lambda v: v >= 0.8),
    Target(key="vs_openai_session", text="≥ 1.4", source=_ISSUE, check=lambda v: v >= 1.4),
    Target(key="vs_langgraph_saver", text="≥ 2.5", source=_ISSUE, check=lambda v: v >= 2.5),
    Target(key="vs_langgraph_postgres_saver", text="≥ 2", source="restart issue (PostgreSQL "
           "peer)", check=lambda v: v >= 2),
    Target(key="server_scale_ratio", text="≤ 1.5", source=_ISSUE, check=lambda v: v <= 1.5),
    *(Target(key=f"server_mix_{mix}", text="≤ 2 (p99)", source=_MIX,
             check=lambda v: v <= 2) for mix in SERVER_MIXES),
    *(Target(key=f"cold_first_build_{backend}", text="≤ 3 (50k ÷ 500 rows)", source=_RESTART,
             check=lambda v: v <= 3) for backend in ("sqlite", "postgres")),
    *(Target(key=f"cold_first_build_{backend}_ms", text="≤ 20 ms (p50)", source=_RESTART,
             check=lambda v: v <= 20) for backend in ("sqlite", "postgres")),
    *(Target(key=f"cold_first_build_{backend}_rss_kb", text="≤ 16 MB (ru_maxrss growth)",
             source=_RESTART, check=lambda v: v <= 16 * 1024)
      for backend in ("sqlite", "postgres")),
    Target(key="cold_wake_p99_ratio", text="≤ 1.5 (flat: some servers 50k rows ÷ all 500)",
           source=_RESTART, check=lambda v: v <= 1.5),
    Target(key="telemetry_overhead", text="≤ 1.02 (noise)", source="operators issue",
           check=lambda v: v <= 1.02),
    Target(key="telemetry_build_overhead", text="≤ 1.05", source="operators issue",
           check=lambda v: v <= 1.05),
    Target(key="cli_startup_ms", text="≤ 250 ms", source="operators issue",
           check=lambda v: v <= 250),
    Target(key="db_calls_per_warm_build", text="= 0", source="core issue",
           check=lambda v: v == 0),
    Target(key="tool_write_ratio_sqlite", text="≤ 2", source="same bar as record_turn",
           check=lambda v: v <= 2),
    Target(key="tool_write_ratio_sqlite_inline", text="≤ 2", source=_INLINE,
           check=lambda v: v <= 2),
    Target(key="bytes_per_turn", text="≈ 0 (≤ 64 B)",
           source="performance issue (bounded by channels)", check=lambda v: v <= 64),
    Target(key="scale_ratio", text="≤ 1.5 (flat)", source="performance issue (flat as data "
           "grows)", check=lambda v: v <= 1.5),
    Target(key="janitor_writer_p99_ms", text="< 10 ms", source="performance issue",
           check=lambda v: v < 10),
)

#: Scenarios that are floors or peers (their bimodality is flagged).
FLOOR_PREFIXES = ("floor_", "raw_", "hand_", "langgraph_", "openai_")


def bimodal_floors(results: dict[str, Any]) -> list[str]:
    """Floors whose block timings fell into two groups during this run."""
    return [name for name, s in results.get("scenarios", {}).items()
            if name.startswith(FLOOR_PREFIXES) and s.get("bimodal")]


def evaluate_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for target in TARGETS:
        value = results.get(target.key)
        met: bool | None = None if value is None else target.check(float(value))
        if target.key == "build_ratio" and results.get("build_texts_equal") is False:
            met = False  # a ratio against a floor that renders other text proves nothing
        if (target.key == "server_scale_ratio"
                and (results.get("server_scale") or {}).get("texts_equal") is False):
            met = False  # the two servers' builds showed different channels
        if (target.key.startswith("server_mix_")
                and (results.get("server_mix") or {}).get("db_reads_in_timed_builds")):
            met = False  # a warm build read from the database
        out.append({"metric": target.key, "value": value, "target": target.text,
                    "met": met, "source": target.source,
                    "cpu_ratio": results.get(CPU_KEYS.get(target.key, ""))})
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


def load_averages() -> list[float] | None:
    """1-, 5- and 15-minute load averages, as ``uptime`` prints them."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
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
        "load_average_end": load_average(), "load_averages_end": load_averages(),
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

#: What each floor is, for a reader who doubts the ratios.
FLOORS_SECTION = [
    "", "## The floors", "",
    "**Inline write floor** (`floor_inline_record`, `floor_inline_turn`, "
    "`floor_inline_tool_write`). The strongest floor for a lone caller, the way stm "
    "writes when nothing else waits (`STM_SQLITE_INLINE_WRITES`): the SQL, pragmas and "
    "checkpoint policy of the write floors below, run on the caller's own thread, "
    "`BEGIN IMMEDIATE`, the upserts, `COMMIT`, no queue, future or thread hop. "
    "`*_sqlite_inline` ratios divide stm by it; the issue's `record_ratio_sqlite` and "
    "`turn_ratio_sqlite` keep the dedicated-thread floor they were defined against, which "
    "stm now beats by not making its hop (those ratios read below 1 for that reason, not "
    "for less work).",
    "", "**SQLite write floor** (`floor_thread_record`). Python's own `sqlite3` on one "
    "dedicated thread, the way stm writes under concurrent callers: the caller puts the "
    "turn on a queue and awaits "
    "a future that the thread settles with `call_soon_threadsafe`, so each turn costs one "
    "hop each way. The thread runs the very SQL text stm compiled for its capture upsert "
    "(taken from an stm store on the same file), binds the same two parameter rows (the "
    "ten messages as the very JSON bytes stm stores, written by the json module's encoder "
    "built once, non-ASCII kept), in "
    "`BEGIN IMMEDIATE … COMMIT`, with stm's pragmas (WAL, `synchronous=NORMAL`, "
    "`busy_timeout`, `foreign_keys`) and stm's checkpoint policy (no automatic checkpoint "
    "on the writer, the WAL file cut back to 2 MiB when it starts over; passive ones on a "
    "second connection until caught up once the WAL grew by 4 MiB, one on the writer "
    "between two turns once it passed 16 MiB). It "
    "has no savepoints, no cache, no hooks, no validation: nothing a write could do with "
    "less. `raw_aiosqlite_record` (three aiosqlite hops per turn) is kept as the older, "
    "weaker floor.",
    "", "**Tool-write floor** (`floor_thread_tool_write`). The same thread, queue, pragmas "
    "and checkpoint policy as the write floor, on the same file (so it rewrites the rows the "
    "record floor keeps, messages and all), running stm's summary tool write: for the live "
    "row and the user's copy, the very SQL stm compiled for the memory upsert (summary set, "
    "the live row's counter reset, the row returned) and for the summary history (a "
    "revision inserted, old revisions trimmed to stm's default of 11), one dict of "
    "parameters per row, all in one `BEGIN IMMEDIATE … COMMIT`, one hop per call. It "
    "validates nothing and keeps no cache. `raw_aiosqlite_tool_write` (the two upserts "
    "alone, no revision, three aiosqlite hops) is kept as the older, weaker floor "
    "(`tool_write_ratio_vs_aiosqlite`).",
    "", "**Whole-turn floor** (`floor_thread_turn`). The write above, the returned row kept "
    "in a plain dict, then a hand-written build (`floors.HandBuild`: dicts and f-strings "
    "for this one workload) over that dict. The texts it renders are compared with stm's "
    "before timing (`turn_texts`); stm's turn is `record_turn` + warm `build_context`. "
    "The same turns split in two (`turn_split_cpu_us`): the main thread's CPU time around "
    "each half, the write and the build after it, for both sides.",
    "", "**Concurrency floor**. The same writer thread: with 100 callers at once it drains "
    "whatever is queued and commits it as one transaction, a plain group-commit writer of "
    "about 60 lines. stm batches the same way, so the ratio measures what stm spends per "
    "turn around the batch, not batching itself.",
    "", "**PostgreSQL floor** (`floor_asyncpg_statement`). stm's own single capture "
    "statement (both upserts and the change notice, one round trip), compiled by a store "
    "on a schema of its own, sent on one plain asyncpg connection: no pool, no reset on "
    "release. `raw_asyncpg_record` (BEGIN, two statements, COMMIT) is the older floor.",
    "", "**Peers**. LangGraph's `AsyncSqliteSaver` (put a checkpoint of the last 10 "
    "messages, read it back) and the OpenAI Agents `SQLiteSession` (add the two new "
    "items, read the last 10) run at stm's durability, `synchronous=NORMAL`; their "
    "out-of-the-box `synchronous=FULL` (an fsync per commit) is reported beside them "
    "(`vs_peers_sdk_default`). Every stm turn uses a fresh `Turn` object, as hosts do. "
    "The floor of stm's own turn runs beside them on the same workload (stm's SQL on the "
    "caller's thread, the hand-written build, the same texts, checked): a peer's time "
    "over the floor's (`vs_peers_floor`) is the most stm could score against that peer "
    "without doing less work per turn.",
    "", "**Time**. Turn `i` is stamped `i` seconds after the bench's epoch, never earlier "
    "than the turn before it: scenarios sharing a store take turns over the same indexes, "
    "and a clock set from the index alone went back at every change of scenario, making "
    "every stm write land behind newer rows of its cached views (a cost the floors do not "
    "have and a host's forward-moving clock never causes). That cost is measured apart "
    "(*Writes out of order*). The workload prepared before timing (a `Turn` per index, "
    "histories, replies) is set aside from the garbage collector (`gc.freeze`) before any "
    "store or floor opens; what the stores and floors make afterwards is collected as usual.",
    "", "**Build floor** (`hand_build_*`). A hand-written build of the same texts for one "
    "known server: plain dicts and f-strings, the rules every build must apply (lineage, "
    "expiry, private channels) as inline comparisons, no plugins, no memo, and plain tuples "
    "instead of result objects; the texts are compared before timing (see *Context build*).",
]


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
        "and tails (p99) depend on the machine and on what else it runs. The comparisons "
        "whose turns hand their writes to a thread one at a time run with every thread "
        "of the process on one CPU (see *Thread placement*).",
        "",
        "## Targets",
        "",
        "Every ratio divides medians of wall time per turn; *CPU ratio* is the same "
        "comparison in process CPU time per turn (all threads), which does not swing "
        "with an idle or busy second vCPU (for `cli_startup_ms`: the command's own CPU "
        "milliseconds, user + system).",
        "",
        "| metric | value | CPU ratio | target | status | from |",
        "|---|---:|---:|---|---|---|",
    ]
    for t in results["targets"]:
        lines.append(f"| `{t['metric']}` | {_fmt(t['value'])} | {_fmt(t.get('cpu_ratio'))} | "
                     f"{t['target']} | {_met(t['met'])} | {t['source']} |")
    lines += ["", f"stm's CPU per host turn (record + warm build, SQLite): "
                  f"{_fmt(results.get('cpu_us_per_turn'))} µs; floors: "
                  + ", ".join(f"{k} {_fmt(v)} µs" for k, v in
                              (results.get("cpu_us_per_turn_floors") or {}).items()) + "."]
    shares = [(what, share) for what, share in (
        ("the sequential SQLite write scenarios", results.get("writes_inline_share")),
        ("the peers' workload", results.get("peers_writes_inline_share")),
        ("100 channels at once", (results.get("concurrent") or {}).get("writes_inline_share")),
        ("a lone caller on a busy loop", results.get("busy_loop_writes_inline_share")))
        if share is not None]
    if shares:
        lines += ["", "stm's writes run on the caller's thread (inline, no hop): "
                  + ", ".join(f"{_fmt(100 * share)} % in {what}" for what, share in shares)
                  + "; the rest went to the writer thread."]
    flagged = results.get("bimodal_floors") or []
    lines += ["", "Bimodal floors in this run: " + (", ".join(flagged) if flagged else
              "none") + " (block medians in two groups: the machine changed state; "
              "trust the CPU ratios over the wall ones for these)."]
    lines += FLOORS_SECTION
    skipped = results.get("record_ratio_postgres_skipped")
    if skipped:
        lines += ["", f"PostgreSQL: skipped ({skipped})."]
    elif results.get("record_ratio_postgres_no_notice") is not None:
        lines += ["", "PostgreSQL against the floor without the change notice (reported, "
                  "not a bar: cross-process invalidation is correctness): "
                  "`record_ratio_postgres_no_notice` "
                  f"{_fmt(results['record_ratio_postgres_no_notice'])} (CPU "
                  f"{_fmt(results.get('record_cpu_ratio_postgres_no_notice'))})."]
    if results.get("peers_unavailable"):
        for peer, reason in results["peers_unavailable"].items():
            lines.append(f"Peer {peer} unavailable: {reason}")
    lines += ["", "## Per-turn timings (µs)", "",
              "| scenario | n | median | CPU / turn | p95 | p99 | bimodal | round medians |",
              "|---|---:|---:|---:|---:|---:|---|---|"]
    for name, s in results["scenarios"].items():
        rounds = ", ".join(_fmt(r) for r in s.get("round_medians_us", []))
        lines.append(f"| {name} | {s['n']:,} | {_fmt(s['median_us'])} | "
                     f"{_fmt(s.get('cpu_us_per_turn'))} | {_fmt(s['p95_us'])} | "
                     f"{_fmt(s['p99_us'])} | {_fmt(s.get('bimodal'))} | {rounds} |")
    lines += _build_section(results) + _growth_section(results) + _scale_section(results)
    lines += _server_scale_section(results) + _server_mix_section(results)
    lines += _cold_build_section(results)
    lines += _janitor_section(results) + _cache_section(results) + _concurrency_section(results)
    lines += _turn_split_section(results) + _peers_section(results)
    lines += _postgres_peer_section(results)
    lines += _placement_section(results)
    lines += _out_of_order_section(results) + _names_section(results)
    lines += _cli_section(results)
    if results.get("errors"):
        lines += ["", "## Scenarios that failed", ""]
        lines += [f"- `{k}`: {v}" for k, v in results["errors"].items()]
    return "\n".join(lines) + "\n"


def _peers_section(r: dict[str, Any]) -> list[str]:
    floor = r.get("vs_peers_floor") or {}
    floor_cpu = r.get("vs_peers_floor_cpu") or {}
    rows = [(key, r.get(key), r.get(CPU_KEYS[key]), floor.get(peer), floor_cpu.get(peer))
            for key, peer in (("vs_openai_session", "openai"),
                              ("vs_langgraph_saver", "langgraph"))]
    if all(row[3] is None for row in rows):
        return []
    equal = r.get("peers_floor_texts_equal")
    return ["", "## Peers against stm and against the floor", "",
            "Each peer's host turn over stm's and over the floor of stm's turn on the "
            "same workload, in the same interleaved run with every thread on one CPU, in wall "
            "and CPU time. The floor's columns are what stm would score if it did the floor's "
            "work and nothing "
            "more; where a target lies above it, only a turn that writes or reads less "
            "could meet it. Floor texts equal to stm's: "
            f"{'yes' if equal else 'NO (the floor column proves nothing)'}.", "",
            "| metric | peer ÷ stm | CPU | peer ÷ floor | CPU |", "|---|---:|---:|---:|---:|",
            *(f"| `{k}` | {_fmt(ours)} | {_fmt(ours_cpu)} | {_fmt(best)} | {_fmt(best_cpu)} |"
              for k, ours, ours_cpu, best, best_cpu in rows)]


def _postgres_peer_section(r: dict[str, Any]) -> list[str]:
    key = "vs_langgraph_postgres_saver"
    if r.get(key) is None:
        reason = r.get(f"{key}_skipped")
        return ["", "## PostgreSQL peer", "", f"Not measured: {reason}."] if reason else []
    scenarios = r.get("scenarios") or {}
    rows = [(name, scenarios.get(name) or {}) for name in (
        "stm_host_turn_postgres", "langgraph_postgres_saver_turn", "floor_asyncpg_host_write")]
    return ["", "## PostgreSQL peer", "",
            "stm's host turn (`record_turn`, then a warm `build_context`) against LangGraph's "
            "`AsyncPostgresSaver` (`aput` of the last 10 messages, then `aget_tuple`), on the "
            "same server, interleaved, both committing with synchronous_commit="
            f"`{r.get('postgres_peer_synchronous_commit')}`.", "",
            "The floor is stm's one write statement on a raw asyncpg connection (no build): "
            "the peer over the floor is the most stm could score against it without "
            "writing less per turn.", "",
            "| metric | peer ÷ stm | CPU | peer ÷ floor | CPU |", "|---|---:|---:|---:|---:|",
            f"| `{key}` | {_fmt(r.get(key))} | {_fmt(r.get(CPU_KEYS[key]))} | "
            f"{_fmt(r.get(f'{key}_floor'))} | {_fmt(r.get(f'{key}_floor_cpu'))} |", "",
            "| scenario | median µs | CPU µs | p99 µs |", "|---|---:|---:|---:|",
            *(f"| {name} | {_fmt(s.get('median_us'))} | {_fmt(s.get('cpu_us_per_turn'))} | "
              f"{_fmt(s.get('p99_us'))} |" for name, s in rows)]


def _placement_section(r: dict[str, Any]) -> list[str]:
    across = r.get("across_cpus") or {}
    peers = r.get("vs_peers_across_cpus") or {}
    rows = [("record_ratio_sqlite", r.get("record_ratio_sqlite"),
             across.get("record_ratio_sqlite")),
            ("turn_ratio_sqlite", r.get("turn_ratio_sqlite"), across.get("turn_ratio_sqlite")),
            ("vs_openai_session", r.get("vs_openai_session"), peers.get("openai")),
            ("vs_langgraph_saver", r.get("vs_langgraph_saver"), peers.get("langgraph"))]
    if all(a is None for _k, _o, a in rows):
        return []
    return ["", "## Thread placement", "",
            "The SQLite record, host turn and tool write, the peers, telemetry and scale "
            "run with every thread of the process on one CPU (`bench/placement.py`): a hop "
            "is then a context switch, the cheapest it gets, for both sides. Left to the "
            "scheduler, a hop costs two to three times as much when the writer thread sits "
            "on the other, idle CPU, which Linux decides once per thread and keeps: two "
            "identical write floors measured 98 and 196 µs a write in one run. The table "
            "also has the same comparisons with the event loop's thread on one CPU and "
            "every other thread on the other (every hop a cross-CPU wake-up, as on a busy "
            "host). A lone stm write makes no hop (it runs inline) and the dedicated-thread "
            "floors one; the peers make more, which the second placement charges them for "
            "(the `record_ratio_sqlite` and `turn_ratio_sqlite` rows divide by the "
            "dedicated-thread floor).", "",
            "| metric | one CPU | across CPUs |", "|---|---:|---:|",
            *(f"| `{k}` | {_fmt(one)} | {_fmt(two)} |" for k, one, two in rows)]


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


def _out_of_order_section(r: dict[str, Any]) -> list[str]:
    place = r.get("out_of_order_place_us")
    if not place:
        return []
    rows = r.get("out_of_order_view_rows")
    floor, cpu = r.get("out_of_order_floor_us", {}), r.get("out_of_order_place_cpu_us", {})
    ratios, cpu_ratios = r.get("out_of_order_ratio", {}), r.get("out_of_order_cpu_ratio", {})
    lines = ["", "## Writes out of order", "",
             f"One write mirrored into a full cached view ({rows:,} rows), by how many rows "
             "stay newer than it, against the floor (a dict beside two lists kept in time "
             "order, a binary search and a list insert per write; `scenarios_view`). The turn "
             "scenarios' clocks only move forward (`scenarios_record.stamp`), as a host's "
             "does; this is what a write stamped behind newer rows (a process whose clock is "
             "behind) costs the view.", "",
             "| newer rows | stm µs | stm CPU µs | floor µs | ratio | CPU ratio |",
             "|---:|---:|---:|---:|---:|---:|"]
    for name, us in place.items():
        lines.append(f"| {name.removeprefix('behind_')} | {_fmt(us)} | {_fmt(cpu.get(name))} | "
                     f"{_fmt(floor.get(name))} | {_fmt(ratios.get(name))} | "
                     f"{_fmt(cpu_ratios.get(name))} |")
    return lines


def _names_section(r: dict[str, Any]) -> list[str]:
    names = r.get("turn_names_us")
    if not names:
        return []
    guild = r.get("turn_names_guild", {})
    cpu = r.get("turn_names_cpu_us", {})
    return ["", "## A big guild's names", "",
            f"A `Turn` for a guild of {guild.get('channels', 0):,} channels and "
            f"{guild.get('threads', 0):,} threads, and three channel labels: "
            f"{_fmt(names.get('turn_plain_names'))} µs (CPU "
            f"{_fmt(cpu.get('turn_plain_names'))}) from plain mappings (checked, copied and "
            f"searched for shared names on every turn), {_fmt(names.get('turn_name_map'))} µs "
            f"(CPU {_fmt(cpu.get('turn_name_map'))}) from a `NameMap` and an `IdSet` built "
            "once for the guild."]


def _cli_section(r: dict[str, Any]) -> list[str]:
    c = r.get("cli_startup")
    if not c:
        return []
    imp = c["imports"]
    return ["", "## Command start-up", "",
            f"`{c['command']}`, median of {c['runs']} runs of the command installed "
            f"({c.get('install', 'beside the bench interpreter')}): "
            f"{_fmt(r.get('cli_startup_ms'))} ms (min {_fmt(c['min_ms'])}, max "
            f"{_fmt(c['max_ms'])}); a bare `python -c pass` interleaved with it: "
            f"{_fmt(r.get('cli_python_floor_ms'))} ms. CPU time (user + system) of the "
            f"same runs: {_fmt(r.get('cli_startup_cpu_ms'))} ms, and "
            f"{_fmt(r.get('cli_python_floor_cpu_ms'))} ms for `python -c pass`. "
            "Under `python -X importtime`: "
            f"{imp['modules']} modules, {_fmt(imp['total_import_ms'])} ms of imports, "
            f"SQLAlchemy imported: {_fmt(imp['sqlalchemy_imported'])}.", "",
            "| package | import self time ms |", "|---|---:|",
            *(f"| {k} | {_fmt(v)} |" for k, v in imp["top_packages_ms"].items())]


def _spread(values: list[float]) -> str:
    """``lowest–highest`` of a run's per-run figures (``–`` when none)."""
    return f"{_fmt(min(values))}–{_fmt(max(values))}" if values else "–"


def _concurrency_section(r: dict[str, Any]) -> list[str]:
    c = r.get("concurrent")
    if not c:
        return []
    rate, cpu = c["turns_per_s"], c["cpu_us_per_turn"]
    return ["", "## Concurrency", "",
            f"{c['tasks']} channels × {c['turns_per_task']} turns at once, stm against the "
            "group-commit floor (one thread draining a queue, one commit per batch). Each of "
            f"{c['runs']} runs measures stm and the floor back to back (who goes first "
            "alternates); a ratio is the median of the runs' ratios, the rates and CPU times "
            "the medians of the runs'. Whole-turn ratios of the single runs: "
            f"{_spread(c.get('turn_ratios', []))}.", "",
            "| what | stm turns/s | floor turns/s | ratio | stm CPU µs/turn | "
            "floor CPU µs/turn |", "|---|---:|---:|---:|---:|---:|",
            f"| whole host turns | {_fmt(rate['stm_turns'])} | {_fmt(rate['floor_turns'])} | "
            f"{_fmt(r.get('concurrent_throughput_ratio'))} | {_fmt(cpu['stm_turns'])} | "
            f"{_fmt(cpu['floor_turns'])} |",
            f"| writes only | {_fmt(rate['stm_writes'])} | {_fmt(rate['floor_writes'])} | "
            f"{_fmt(r.get('concurrent_write_throughput_ratio'))} | {_fmt(cpu['stm_writes'])} | "
            f"{_fmt(cpu['floor_writes'])} |",
            f"| whole host turns, the floor that batches best | {_fmt(rate['stm_turns'])} | "
            f"{_fmt(rate['best_floor_turns'])} | "
            f"{_fmt(r.get('concurrent_throughput_ratio_best'))} | {_fmt(cpu['stm_turns'])} | "
            f"{_fmt(cpu['best_floor_turns'])} |", *_collector_lines(c)]


def _collector_lines(c: dict[str, Any]) -> list[str]:
    """The garbage collector's share of the concurrent runs (when measured)."""
    passes, spent = c.get("gc_passes_per_1000_turns"), c.get("gc_us_per_turn")
    if not passes or not spent:
        return []
    return ["", "Garbage collection in these runs (passes of any generation per 1,000 "
            "turns; their wall µs per turn): "
            + ", ".join(f"{name} {_fmt(passes[name])} ({_fmt(spent[name])} µs)"
                        for name in ("stm_turns", "floor_turns", "best_floor_turns",
                                     "stm_writes", "floor_writes", "best_floor_writes")
                        if name in passes and name in spent) + "."]


def _turn_split_section(r: dict[str, Any]) -> list[str]:
    cpu = r.get("turn_split_cpu_us")
    if not cpu:
        return []
    wall = r.get("turn_split_wall_us", {})
    return ["", "## Where a host turn's CPU goes", "",
            "Whole host turns (`record_turn`, then `build_context`; the floor's write, then its "
            "hand-written build over its own dict), the main thread's CPU time and the wall "
            "time read around each half. Both sides write a lone turn on the main thread "
            "(stm's inline write, the inline floor), so the write half counts the same SQL "
            "on both sides. "
            "Unlike `build_ratio`'s warm build of a server nobody writes to, the "
            "build here follows a write: the row just written moves the other channels, one "
            "of them is shown for the first time and the block is new to convert.", "",
            "| half | stm CPU µs | floor CPU µs | CPU ratio | stm wall µs | floor wall µs |",
            "|---|---:|---:|---:|---:|---:|",
            f"| write | {_fmt(cpu.get('stm_record'))} | {_fmt(cpu.get('floor_write'))} | "
            f"{_fmt(r.get('turn_split_record_cpu_ratio'))} | {_fmt(wall.get('stm_record'))} | "
            f"{_fmt(wall.get('floor_write'))} |",
            f"| build | {_fmt(cpu.get('stm_build'))} | {_fmt(cpu.get('floor_build'))} | "
            f"{_fmt(r.get('turn_split_build_cpu_ratio'))} | {_fmt(wall.get('stm_build'))} | "
            f"{_fmt(wall.get('floor_build'))} |"]


def _server_scale_section(r: dict[str, Any]) -> list[str]:
    s = r.get("server_scale")
    if not s:
        return []
    small, large = s["channels"]
    out = ["", "## One server, many channels", "",
           f"Warm `build_context` in a server with {large:,} channels that all have a recent "
           f"row, against one with {small:,}: {_fmt(r.get('server_scale_ratio'))}× "
           f"(CPU {_fmt(r.get('server_scale_cpu_ratio'))}×). Rows per cached server view are "
           f"bounded by `cache_max_rows_per_view` ({_fmt(s.get('max_rows_per_view'))}). Both "
           f"builds show the same channels, the newest (texts equal: "
           f"{_fmt(s.get('texts_equal'))}).", "",
           "| channels | rows in the cached view | RSS growth on load (KB) |",
           "|---:|---:|---:|"]
    for n, v in s["views"].items():
        out.append(f"| {int(n):,} | {v['rows_in_view']:,} | {v['rss_growth_kb']:,} |")
    return out


def _server_mix_section(r: dict[str, Any]) -> list[str]:
    s = r.get("server_mix")
    if not s:
        return []
    small, large = s["channels"]
    out = ["", "## One server, hard mixes", "",
           f"Warm `build_context` in a server of {large:,} rows of each mix, against the same "
           f"turns in {small:,} tidy channels (`many_scopes`: the same turns, rotating over "
           f"64 lineages and 16 users with hidden channels of their own, in {small:,} "
           f"channels): p99 over p99 (target ≤ 2) and median over "
           f"median. Database reads made by the timed builds: "
           f"{_fmt(s.get('db_reads_in_timed_builds'))}.", "",
           "| mix | p99 ratio | median ratio | rows held (view + scopes) |",
           "|---|---:|---:|---:|"]
    for mix in SERVER_MIXES:
        view = s["views"].get(mix, {})
        out.append(f"| {mix} | {_fmt(r.get(f'server_mix_{mix}'))} | "
                   f"{_fmt(view.get('median_ratio'))} | "
                   f"{_fmt(view.get('rows_held_with_scopes'))} |")
    return out


def _cold_build_section(r: dict[str, Any]) -> list[str]:
    s = r.get("cold_first_build")
    if not s:
        return []
    small, big = s["rows"]
    out = ["", "## The first build after a restart", "",
           f"One `build_context` on a freshly opened store, in a server of {big:,} rows "
           f"against one of {small:,} ({s['samples']} samples each, alternating), after "
           "the store's very first build (in a server without rows: a new connection's "
           "costs, whatever the server; its median is in its own column). Peak RSS "
           "growth: `ru_maxrss` after the build minus before it, in a child process that "
           "built once in the other server first; Python's own allocations: `tracemalloc` "
           "peak, in another child.", "",
           "| backend | big ÷ small (wall) | CPU | big p50 (ms) | small p50 (ms) | "
           "store's first build (ms) | RSS growth big / small (KB) | "
           "tracemalloc peak big / small (KB) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for backend in ("sqlite", "postgres"):
        b = s.get(backend)
        if not b:
            continue
        rss = b["rss"]
        out.append(f"| {backend} | {_fmt(b['ratio'])} | {_fmt(b['cpu_ratio'])} | "
                   f"{_fmt(b['big_median_ms'])} | {_fmt(b['small_median_ms'])} | "
                   f"{_fmt(b.get('store_first_build_ms'))} | "
                   f"{rss['big']['maxrss_growth_kb']:,} / {rss['small']['maxrss_growth_kb']:,} | "
                   f"{rss['big']['tracemalloc_peak_kb']:,} / "
                   f"{rss['small']['tracemalloc_peak_kb']:,} |")
    wake = s.get("wake")
    if wake:
        small_rows, big_rows = wake["rows"]
        out += ["", f"{wake['all_small']['servers']:,} servers get their first turn at once "
                f"on one fresh SQLite store: first all of {small_rows:,} rows, then with "
                f"{wake['big_servers']} of them of {big_rows:,} rows. p99 ratio "
                f"{_fmt(wake['p99_ratio'])} (CPU {_fmt(wake.get('cpu_ratio'))}), statements ratio "
                f"{_fmt(wake['statements_ratio'])}.", "",
                "| servers | p50 (ms) | p99 (ms) | all done (ms) | CPU (ms) | statements | "
                "per server |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name in ("all_small", "some_big"):
            x = wake[name]
            out.append(f"| {name.replace('_', ' ')} | {_fmt(x['p50_ms'])} | "
                       f"{_fmt(x['p99_ms'])} | {_fmt(x['all_done_ms'])} | {_fmt(x['cpu_ms'])} | "
                       f"{x['statements']:,} | {_fmt(x['statements_per_server'])} |")
    return out


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
