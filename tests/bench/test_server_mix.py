"""The server-mix scenario runs at the tiny size and reports every mix.

Timings are not asserted (a loaded machine says nothing about them); what is:
every mix has its ``server_mix_*`` key and a target, the timed builds read
nothing from the database, every server's build showed other channels, and
the views stayed within their bound (with their scopes).
"""

from __future__ import annotations

from pathlib import Path

from bench import report, scenarios_server_mix
from bench.config import make_config
from stm_core.engine.cache import MAX_SCOPES_PER_VIEW


async def test_the_scenario_reports_each_mix(tmp_path: Path) -> None:
    cfg = make_config("tiny", tmp_path)
    results = await scenarios_server_mix.run(cfg)
    details = results["server_mix"]
    assert details["db_reads_in_timed_builds"] == 0
    assert set(details["other_channel_blocks_shown"].values()) == {1}
    bound = details["max_rows_per_view"]
    for mix in scenarios_server_mix.MIXES:
        assert results[f"server_mix_{mix}"] > 0
        view = details["views"][mix]
        assert view["rows"] > bound and 0 < view["rows_in_view"] <= bound
        assert view["rows_held_with_scopes"] <= (1 + MAX_SCOPES_PER_VIEW) * bound
    targets = {t["metric"] for t in report.evaluate_targets(results)}
    assert {f"server_mix_{mix}" for mix in scenarios_server_mix.MIXES} <= targets
    section = "\n".join(report._server_mix_section(results))
    assert all(f"| {mix} |" in section for mix in scenarios_server_mix.MIXES)
