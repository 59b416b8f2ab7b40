"""The first-build-after-a-restart scenario runs at the tiny size.

Timings are not asserted (a loaded machine says nothing about them); what
is: every key and target is reported, the memory of one build was measured
in child processes, and a restart that wakes servers with big ones among
them runs a number of statements that does not grow with their rows.
"""

from __future__ import annotations

from pathlib import Path

from bench import report, scenarios_cold_build
from bench.config import make_config

KEYS = ("cold_first_build_sqlite", "cold_first_build_sqlite_ms",
        "cold_first_build_sqlite_rss_kb", "cold_wake_p99_ratio")


async def test_the_scenario_reports_its_keys(tmp_path: Path) -> None:
    cfg = make_config("tiny", tmp_path)
    results = await scenarios_cold_build.run(cfg)
    for key in KEYS:
        assert results[key] is not None and results[key] >= 0, key
    assert results["cold_first_build_sqlite"] > 0
    details = results["cold_first_build"]
    for name in ("big", "small"):
        assert details["sqlite"]["rss"][name]["tracemalloc_peak_kb"] > 0
    wake = details["wake"]
    assert wake["all_small"]["servers"] == wake["some_big"]["servers"] == cfg.wake_servers
    # A server past the view's first read costs two statements more (its
    # scope's read and its channel's row), whatever its size.
    assert (wake["some_big"]["statements"]
            <= wake["all_small"]["statements"] + 2 * cfg.wake_big_servers)
    if cfg.postgres_url:
        assert results["cold_first_build_postgres"] > 0
    metrics = {t["metric"] for t in report.evaluate_targets(results)}
    assert set(KEYS) <= metrics
    section = "\n".join(report._cold_build_section(results))
    assert "| sqlite |" in section and "some big" in section
