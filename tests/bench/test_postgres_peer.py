"""LangGraph's PostgreSQL saver runs as a peer of stm on the same server.

``python -m bench --tiny --only peers_postgres`` on the test server: the
comparison ran, at the same durability on both sides, beside its floor, and
reached the targets table and the report. Timings are not asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PG_ENV, postgres_base_url

ROOT = Path(__file__).resolve().parents[2]
KEY = "vs_langgraph_postgres_saver"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    base = postgres_base_url()  # skips, or fails under STM_REQUIRE_POSTGRES=1
    if base is None:
        pytest.skip(f"the PostgreSQL peer needs {PG_ENV}")
    out = tmp_path_factory.mktemp("bench_pg_peer")
    proc = subprocess.run([sys.executable, "-m", "bench", "--tiny", "--only", "peers_postgres",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT), PG_ENV: base})
    assert (out / "results.json").exists(), proc.stderr[-4000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return results, (out / "RESULTS.md").read_text(encoding="utf-8")


def test_the_saver_ran_beside_stm_and_its_floor(tiny_run: tuple[dict[str, Any], str]) -> None:
    results, _ = tiny_run
    assert "errors" not in results, results.get("errors")
    assert results.get(f"{KEY}_skipped") is None  # the test extra installs the saver
    for key in (KEY, f"{KEY}_cpu", f"{KEY}_floor", f"{KEY}_floor_cpu"):
        assert isinstance(results[key], float) and results[key] > 0, key
    for name in ("stm_host_turn_postgres", "langgraph_postgres_saver_turn",
                 "floor_asyncpg_host_write"):
        stats = results["scenarios"][name]
        assert stats["n"] > 0 and stats["cpu_us_per_turn"] > 0, name


def test_both_sides_commit_at_the_same_durability(tiny_run: tuple[dict[str, Any], str]) -> None:
    results, _ = tiny_run
    # stm sets no synchronous_commit of its own: the server's default.
    assert results["postgres_peer_synchronous_commit"] == "on"


@pytest.mark.parametrize("durability", ["off", "on"])
async def test_the_saver_commits_at_the_durability_it_is_given(pg_url: str,
                                                               durability: str) -> None:
    """What the bench compares before timing: the saver's session reports the
    setting it was opened with (were it ignored, the check would prove nothing)."""
    from bench.peers import LangGraphPostgresSaver
    from bench.urls import asyncpg_dsn

    schema = pg_url.rsplit("schema=", 1)[1]
    import asyncpg

    admin = await asyncpg.connect(asyncpg_dsn(pg_url.split("?", 1)[0]))
    try:
        await admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    finally:
        await admin.close()
    peer = await LangGraphPostgresSaver(asyncpg_dsn(pg_url.split("?", 1)[0]), schema, 2,
                                        synchronous_commit=durability).open()
    try:
        assert await peer.setting("synchronous_commit") == durability
        await peer.turn(0)
        await peer.turn(1)
    finally:
        await peer.close()


def test_the_target_and_its_cpu_twin_are_reported(tiny_run: tuple[dict[str, Any], str]) -> None:
    results, text = tiny_run
    [row] = [t for t in results["targets"] if t["metric"] == KEY]
    assert row["value"] == results[KEY] and row["cpu_ratio"] == results[f"{KEY}_cpu"]
    assert row["met"] in (True, False) and row["target"] == "≥ 2"
    assert f"| `{KEY}` |" in text and "## PostgreSQL peer" in text
    assert results["meta"]["load_averages_end"] is not None
