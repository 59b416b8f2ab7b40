"""``python -m bench [--quick]``: run every scenario and write the results.

A scenario that cannot run (a missing optional peer, no PostgreSQL) reports
``null`` with a reason; one that fails is recorded under ``errors`` and the
others still run, so a partial picture is never lost.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import (
    report,
    scenarios_build,
    scenarios_busy_loop,
    scenarios_cache,
    scenarios_cli,
    scenarios_cold_build,
    scenarios_history,
    scenarios_janitor,
    scenarios_names,
    scenarios_peers,
    scenarios_prefix,
    scenarios_record,
    scenarios_scale,
    scenarios_server_mix,
    scenarios_server_scale,
    scenarios_telemetry,
    scenarios_turn_split,
    scenarios_view,
)
from bench.config import RunConfig, make_config

log = logging.getLogger("stm.bench")

Scenario = Callable[[RunConfig], Awaitable[dict[str, Any]]]
SCENARIOS: dict[str, Scenario] = {
    "build": scenarios_build.run,
    "record": scenarios_record.sqlite_ratios,
    "postgres": scenarios_record.postgres_ratio,
    "concurrent": scenarios_record.concurrent_throughput,
    "busy_loop": scenarios_busy_loop.run,
    "turn_split": scenarios_turn_split.run,
    "peers": scenarios_peers.run,
    "peers_postgres": scenarios_peers.postgres_run,
    "scale": scenarios_scale.run,
    "server_scale": scenarios_server_scale.run,
    "server_mix": scenarios_server_mix.run,
    "cold_build": scenarios_cold_build.run,
    "janitor": scenarios_janitor.run,
    "cache": scenarios_cache.run,
    "out_of_order": scenarios_view.run,
    "turn_names": scenarios_names.run,
    "prefix": scenarios_prefix.run,
    "history": scenarios_history.run,
    "cli": scenarios_cli.run,
    "telemetry": scenarios_telemetry.run,
}


async def run_all(cfg: RunConfig, only: list[str] | None) -> dict[str, Any]:
    results: dict[str, Any] = dict.fromkeys(report.HEADLINE_KEYS)
    results["scenarios"] = {}
    errors: dict[str, str] = {}
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        log.info("running %s", name)
        start = time.perf_counter()
        try:
            out = await scenario(cfg)
        except Exception as exc:
            log.error("scenario %s failed:\n%s", name, traceback.format_exc())
            errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        results["scenarios"].update(out.pop("scenarios", {}))
        results.update(out)
        log.info("%s done in %.1f s", name, time.perf_counter() - start)
    results["record_ratio"] = results.get("record_ratio_sqlite")
    by_mode = results.get("build_cpu_ratio_by_mode") or {}
    cpu = [v for v in by_mode.values() if v is not None]
    results["build_cpu_ratio"] = max(cpu) if cpu else None
    results["bimodal_floors"] = report.bimodal_floors(results)
    if errors:
        results["errors"] = errors
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small run, under a minute")
    size.add_argument("--tiny", action="store_true", help="seconds; checks the harness only")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent,
                        help="directory for results.json, RESULTS.md, scale.png")
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS),
                        help="run only these scenarios (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    name = "tiny" if args.tiny else "quick" if args.quick else "full"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stm-bench-") as scratch:
        cfg = make_config(name, Path(scratch))
        start, load = time.perf_counter(), report.load_average()
        results = asyncio.run(run_all(cfg, args.only))
        results["targets"] = report.evaluate_targets(results)
        results["meta"] = report.meta(cfg, time.perf_counter() - start, load)
    report.plot_scale(results, args.out / "scale.png")
    report.write_json(results, args.out / "results.json")
    (args.out / "RESULTS.md").write_text(report.markdown(results), encoding="utf-8")
    log.info("wrote %s", args.out / "results.json")
    return 1 if results.get("errors") else 0


if __name__ == "__main__":
    raise SystemExit(main())
